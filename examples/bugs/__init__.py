"""Each module: a correct example with one classic mistake, which the plugin reports and a run exposes."""
