"""`python -m serving.server`: the development server's command line (`serving.server.model_server.main`)."""

import sys

from serving.server.model_server import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m serving.server"))
