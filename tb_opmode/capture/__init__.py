"""Recording a run: ``tb-opmode record`` and ``tb_opmode.record``, beside ``cli`` at the top.

In: a command to run, or a block of the user's own code. Out: one run directory under a
LOGDIR with the evidence of a level (``inprocess.LEVELS``) and a ``manifest.json``.

Modules: ``inprocess`` (inside the job: switches TensorFlow's evidence on as TF loads;
imports nothing else of ours), ``boot`` (the job's ``sitecustomize``, which loads it),
``plan`` (the checks and the run directory), ``tee`` (the job's streams to the terminal
and to files), ``job`` (running the command, signals), ``manifest``, ``summary`` (what is
printed at the end), ``command`` (the ``record`` subcommand), ``api`` (``tb_opmode.record``).
"""
__all__: list[str] = []
