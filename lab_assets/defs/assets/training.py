"""corpus -> gpt_model, and each study's ledger: training trials as assets.

`corpus[corpus]` is the study's text, split once (Parquet of documents; data version = content
hash). `gpt_model[corpus|trial]` trains one trial to its budget, resuming from its checkpoint
if a previous attempt was killed, and appends the trial's row to its study's ledger (a `crash`
row when the loss diverges). `study_ledger[study]` is an observable source: the ledger is
written by the trials, and its observations (recorded by the study_loop sensor) carry the
study's progress as metadata.
"""

import hashlib
import json
import sys

import dagster as dg

from lab_assets.core import key_records, keys, lineage, storage
from lab_assets.core.diverged import TrainingDiverged
from lab_assets.defs import step_versions
from lab_assets.defs.code_links import module_references
from lab_assets.defs.metadata import materialization_metadata
from lab_assets.defs.partitions import CORPUS, STUDY, TRIAL_CELL, TRIAL_TO_CORPUS
from lab_assets.training import corpus as corpora
from lab_assets.training import ledger
from lab_assets.training import study as studies

GROUP = "training"
# Declared, with the loop, model and corpus code a trial's result depends on: defs/step_versions.py.
CODE_VERSION = step_versions.declared(__name__)
TRAINING_PACKAGES = ("torch",)


@dg.asset(partitions_def=CORPUS, group_name=GROUP, code_version=CODE_VERSION, kinds={"parquet"})
def corpus(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Documents (whole files) split into train/val once; byte tokens (vocab 256)."""
    key = context.partition_key
    config = studies.corpus_config(key)
    with lineage.timed() as t:
        df = corpora.build(config)
    root, files = corpora.source_files(config)
    content = corpora.content_hash(df)
    prov = lineage.provenance(config.model_dump(mode="json"), config.seed, CODE_VERSION)
    path = storage.write_parquet(storage.asset_path("corpus", key), df, {**prov, "content_hash": content})
    sizes = df.assign(n=df["text"].map(len)).groupby("split")["n"].sum()
    return dg.MaterializeResult(
        metadata=materialization_metadata(
            prov,
            t,
            len(df),
            path,
            train_bytes=int(sizes.get("train", 0)),
            val_bytes=int(sizes.get("val", 0)),
            candidate_files=len(files),
            file_list_digest=corpora.file_list_digest(root, files),
            python=sys.version.split()[0] if config.source == "stdlib" else "n/a",
            content_hash=content,
        ),
        data_version=dg.DataVersion(content),
    )


@dg.asset(
    partitions_def=TRIAL_CELL,
    deps=[dg.AssetDep(corpus, partition_mapping=TRIAL_TO_CORPUS)],
    group_name=GROUP,
    code_version=CODE_VERSION,
    kinds={"pytorch"},
)
def gpt_model(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """A small GPT trained for the trial's budget; val_bpb, tokens/s, MFU in the metadata and
    in the study's ledger."""
    from lab_assets.core import backend
    from lab_assets.training import train

    corpus_key, trial_key = keys.parse_cell_key(context.partition_key)
    cell = keys.cell_key(corpus_key, trial_key)
    trial = studies.trial(trial_key)
    df = storage.read_parquet(storage.asset_path("corpus", corpus_key))
    b = backend.detect()
    row = trial.ledger_row(context.run.run_id)
    with lineage.timed() as t:
        try:
            result = train.train(
                trial.config,
                corpora.tokens(df, "train"),
                corpora.tokens(df, "val"),
                storage.asset_path("gpt_model", cell, ".ckpt.pt"),
                b,
                context.log.info,
            )
        except TrainingDiverged as e:
            ledger.append(
                trial.study,
                {**row, "status": "crash", "steps": e.step, "error": str(e), "wall_seconds": t.wall_seconds},
                trial.noise,
            )
            raise
    weights = train.save_weights(storage.asset_path("gpt_model", cell, ".pt"), result.state_dict)
    written = ledger.append(
        trial.study,
        {
            **row,
            "val_bpb": result.val_bpb,
            "peak_mem_gb": result.peak_memory_gb,
            "tok_sec": result.tokens_per_second,
            "mfu": result.mfu,
            "steps": result.steps,
            "wall_seconds": t.wall_seconds,
        },
        trial.noise,
    )
    prov = lineage.provenance(
        trial.config.model_dump(mode="json"), trial.config.seed, CODE_VERSION, TRAINING_PACKAGES, result.device
    )
    metadata = materialization_metadata(
        prov,
        t,
        result.steps,
        weights,
        val_bpb=result.val_bpb,
        status=written["status"],
        exp=trial.exp,
        description=trial.description,
        steps=result.steps,
        resumed_from_step=result.resumed_from,
        training_seconds=round(result.training_seconds, 3),
        tokens_per_second=round(result.tokens_per_second, 1),
        mfu=result.mfu if result.mfu is not None else "n/a (no peak FLOP/s known)",
        flops_per_token=result.flops_per_token,
        peak_memory_gb=round(result.peak_memory_gb, 4),
        n_params=result.n_params,
        final_train_loss=result.final_loss,
        backend=b.describe(),
        compiled=result.compiled,
        ledger=dg.MetadataValue.path(ledger.path(trial.study, ".tsv")),
    )
    metadata.pop("dagster/row_count")  # a model has no rows; `steps` says how much it trained
    return dg.MaterializeResult(metadata=metadata)


def ledger_version(study: str) -> str:
    rows = ledger.rows(study)
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16] if rows else "empty"


@dg.observable_source_asset(partitions_def=STUDY, group_name=GROUP, metadata=module_references(__file__))
def study_ledger() -> dg.DataVersionsByPartition:
    """Each study's ledger (one row per trial, an object each; TSV and Parquet views beside them)."""
    return dg.DataVersionsByPartition({name: ledger_version(name) for name in key_records.keys("study")})


TRAINING_ASSETS = [corpus, gpt_model, study_ledger]
