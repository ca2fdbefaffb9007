"""Deployment artefacts: the ``pyvolcano install`` bundle, its CRDs, RBAC and Helm chart.

:mod:`~pyvolcano.deploy.bundle` builds every object as a plain dict; :mod:`~pyvolcano.deploy.crds`
holds the CustomResourceDefinitions and their schemas, :mod:`~pyvolcano.deploy.rbac` the verb
table each component's RBAC is made of, :mod:`~pyvolcano.deploy.schema` a validator for those
schemas, and :mod:`~pyvolcano.deploy.helm` writes the Helm chart from the same builder, so the
bundle and the chart cannot drift apart. Nothing here talks to a cluster.
"""
