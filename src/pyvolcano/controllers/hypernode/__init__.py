"""The HyperNode controller: node counts and auto-discovery of HyperNodes (``pkg/controllers/hypernode``).

:mod:`.controller` is the controller, :mod:`.members` resolves a HyperNode's members to Nodes,
:mod:`.discovery` reads the discovery ConfigMap and builds the ``label`` source's HyperNodes.
"""

from __future__ import annotations

from pyvolcano.controllers.hypernode.controller import HyperNodeController

__all__ = ["HyperNodeController"]
