"""The cluster run: the Kubernetes Job's values a matrix decides (``deploy.plan``), the GPUs a
cell boots on (``deploy.gpus``), and a shard as a pod runs it (``deploy.shard``); the verbs
``coldstart cluster-plan`` and ``cluster-shard`` run them, and the manifests run the two
scripts by path."""
