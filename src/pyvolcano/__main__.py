"""``python -m pyvolcano`` runs the command-line interface."""

from pyvolcano.cli.app import main

main()
