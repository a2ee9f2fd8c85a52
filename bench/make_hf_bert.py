"""Build the seed user's own run: HuggingFace's TFBertForSequenceClassification, one step.

In: an output directory. Out: in OUTDIR, a tfdbg2 dump (FULL_HEALTH,
circular_buffer_size=-1), TensorBoard event files and an XPlane profile under
OUTDIR/<timestamp>/, and the run's stderr with TF_CPP_MAX_VLOG_LEVEL=2 and
ONEDNN_VERBOSE=1 as OUTDIR/tf_log.txt: what the seed question's script leaves,
with a randomly initialised ``BertConfig()`` model (bert-base's shape, no
download) and random token ids in place of GLUE/MRPC (batch 1, 128 tokens).

HuggingFace's op names are long
(``tf_bert_for_sequence_classification/bert/encoder/layer_._11/attention/...``), so
TF's log shortens the debug nodes' ``op_name`` attributes to ``head...tail``: the
bench's own BERT-like model, with short names, never takes that path. The script
re-runs itself in a child process so that the TF environment is set before
TensorFlow is imported and stderr lands in the log.
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys

__all__ = ["main"]

SEQ = 128


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TF_USE_LEGACY_KERAS"] = "1"  # transformers' TF models are tf-keras models
    env["TF_ENABLE_ONEDNN_OPTS"] = "1"
    env["TF_CPP_MAX_VLOG_LEVEL"] = "2"
    env["ONEDNN_VERBOSE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    return env


def _run_child(outdir: str, steps: int) -> None:
    import tensorflow as tf
    from transformers import BertConfig, TFBertForSequenceClassification

    tf.debugging.experimental.enable_dump_debug_info(
        outdir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.keras.utils.set_random_seed(0)
    model = TFBertForSequenceClassification(BertConfig())
    n = steps
    config = BertConfig()
    features = {
        "input_ids": tf.random.uniform((n, SEQ), maxval=config.vocab_size, dtype=tf.int32, seed=1),
        "attention_mask": tf.ones((n, SEQ), dtype=tf.int32),
        "token_type_ids": tf.zeros((n, SEQ), dtype=tf.int32),
    }
    labels = tf.random.uniform((n,), maxval=2, dtype=tf.int32, seed=2)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(1).repeat(1)
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=3e-5),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    log_dir = os.path.join(outdir, datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    callback = tf.keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=1, profile_batch=1)
    model.fit(data, epochs=1, steps_per_epoch=steps, callbacks=[callback], verbose=0)
    tf.debugging.experimental.disable_dump_debug_info()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _run_child(args.outdir, args.steps)
        return 0
    os.makedirs(args.outdir, exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), args.outdir, "--child",
           "--steps", str(args.steps)]
    log_path = os.path.join(args.outdir, "tf_log.txt")
    with open(log_path, "wb") as log:
        code = subprocess.run(cmd, env=_child_env(), stdout=log, stderr=subprocess.STDOUT).returncode
    if code:
        sys.stderr.write(f"make_hf_bert: TensorFlow run failed (exit {code}); see {log_path}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
