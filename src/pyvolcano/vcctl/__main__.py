"""``python -m pyvolcano.vcctl``: the same as the ``vcctl`` console script."""

from pyvolcano.vcctl.app import main

main()
