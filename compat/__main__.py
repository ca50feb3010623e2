import sys

from compat.check import main

sys.exit(main())
