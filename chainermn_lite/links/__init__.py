"""Links for model-parallel and multi-node training."""
