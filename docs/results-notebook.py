# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A sweep's results in a notebook
#
# `lab_assets.results` reads what `lab sweep run` materialized: nothing is computed or written.
# Open this file as a notebook with jupytext (`jupytext --to notebook docs/results-notebook.py`,
# or JupyterLab with the jupytext extension), or run it as a script, from a project where
# `python3 run.py demo` (or `lab sweep run SWEEP`) has run. `SWEEP` and `AT` below choose the
# sweep and where its results are (a lab home folder, or a storage URL such as `s3://bucket/lab`;
# `None`: this project's). The default tests run this file on the tiny test sweep.

# %%
import os

from lab_assets import results

SWEEP = os.environ.get("SWEEP", "demo")
AT = os.environ.get("AT") or None

# %% [markdown]
# ## Every number, tidy
# One row per cell and measure: the dataset and method names, every parameter as a column
# (`data.<param>`, `method.<param>`), the seed, the value, and where it came from (the cell's
# partition key, the git commit, the metric's code version).

# %%
table = results.table(SWEEP, at=AT)
table.head()

# %% [markdown]
# Filter and pivot it as any DataFrame: the mean of each measure per method over datasets and seeds.

# %%
by_method = table.pivot_table(index="method", columns="measure", values="value", aggfunc="mean")
by_method

# %% [markdown]
# ## The summary over seeds
# Per dataset config, method config and measure: n, mean, sd, the 95% t-interval and the rank
# (1 = best in the measure's direction), as in `lab report`.

# %%
summary = results.summary(SWEEP, at=AT)
summary[summary["best"]][["dataset_label", "metric", "method_label", "mean", "sd", "n"]]

# %% [markdown]
# ## One cell's embedding
# The `cell` column names a cell; its embedding is one row per point: coordinates and label.

# %%
cell = table["cell"].iloc[0]
points = results.embedding(cell, at=AT)
ax = points.plot.scatter(x="z0", y="z1", c="label", cmap="Spectral", s=4, title=cell)

# %% [markdown]
# ## Measures against method parameters
# Each ranked measure against each numeric method parameter that takes two or more values, one
# line per dataset (mean over seeds, error bars one sd): the figure of `report.html`.

# %%
results.figure(SWEEP, at=AT)
