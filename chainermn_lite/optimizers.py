"""Multi-node optimizers."""
