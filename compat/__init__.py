"""Which TensorFlow (and so TF Serving) releases read bert-tf's exports: `make compat` (`python -m compat`).

Exports are written with the project's TensorFlow (2.21); TF Serving 2.X ships TensorFlow 2.X, and
deployments trail it. The check writes every kind of export from tiny random-weight models
(`compat.exports`), reads each with the project's TensorFlow and with older ones, each in its own
virtualenv (`compat.venvs`, pinned by `compat/constraints/tf-2.X.txt`), by a reader that imports
only TensorFlow and numpy (`compat/reader.py`), with and without tensorflow-text's ops, compares the
answers (`compat.comparison`) and prints the tables (`compat.table`); the failures it expects are
documented in `compat.known_failures`. `compat.check` runs it all.
"""
