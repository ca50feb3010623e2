import sys

from bert_tf_cli import main

sys.exit(main())
