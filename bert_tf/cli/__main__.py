import sys

from bert_tf.cli import main

sys.exit(main())
