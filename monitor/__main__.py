"""``python -m monitor`` runs the ``medmon`` command line."""

from monitor.cli import main

main()
