"""Software-defined assets, one module per family: specs -> datasets -> experiments -> reports."""
