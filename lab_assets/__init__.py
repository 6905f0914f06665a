"""lab_assets: an asset-oriented experiment platform for ML research labs, on Dagster."""
