"""``python -m medmon`` runs the ``medmon`` command line."""

from medmon.monitor.cli.app import main

main()
