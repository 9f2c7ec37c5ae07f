"""Looking at one op or tensor: node info, tensor targets, overflow findings."""
