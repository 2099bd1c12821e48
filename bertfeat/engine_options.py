"""The options of one cluster engine's Python API given to the other's, or a file job's given to a lazy API
(:func:`bertfeat.ray.embed_dataset`, :func:`bertfeat.spark.embed_dataframe`), or the one engine's file job's option
given to its lazy API and back (``preserve_order=``, ``master=``, ``resource_profile=``): refused by name, saying what
the engine takes instead. Their other keyword arguments are BertEmbedder parameters, so such an option reached
BertEmbedder, which said "unexpected keyword argument 'num_workers'", naming neither whose option it is nor what
to do. (The local engine's own options are :func:`bertfeat.files.refuse_local_options`'.)"""

from __future__ import annotations

_RAY = "bertfeat.ray's"
_TO_SPARK = {  # Ray's option -> what the Spark engine takes
    "num_workers": f"it is {_RAY}; Spark runs as many tasks at once as its executors have cores "
                   "(spark.executor.instances, spark.executor.cores): set those on the session",
    "gpus_per_worker": f"it is {_RAY}; Spark gives a task a GPU through its resource scheduling "
                       "(spark.executor.resource.gpu.amount, spark.task.resource.gpu.amount)",
    "cpus_per_worker": f"it is {_RAY}; a Spark task's CPUs, and its torch threads, are spark.task.cpus: set it on "
                       "the session",
    "preserve_order": f"it is {_RAY}; the Spark engine keeps the order of the rows",
}
_TO_RAY = {  # Spark's option -> what the Ray engine takes
    "master": "it is bertfeat.spark's; the Ray engine joins the cluster RAY_ADDRESS names, or the one this process "
              "joined with ray.init(address=...)",
    "resource_profile": "it is bertfeat.spark.embed_dataframe's; the Ray engine's workers get GPUs by "
                        "gpus_per_worker= and CPUs by cpus_per_worker=",
}
_OWN_FILE_JOB = {  # the engine's file job's own option given to its lazy API -> what does its work there
    ("ray", "preserve_order"): "it is bertfeat.ray.embed_parquet's; the Dataset it returns keeps the rows' order where "
                               "its DataContext has execution_options.preserve_order = True: set that",
    ("spark", "master"): "it is bertfeat.spark.embed_files'; the DataFrame runs on the session that made it: start "
                         "that session on the master (SparkSession.builder.master(...))",
}
_OWN_LAZY_API = {  # the engine's lazy API's own option given to its file job -> what does its work there
    ("spark", "resource_profile"): "it is bertfeat.spark.embed_dataframe's; a file job's tasks get GPUs as the session "
                                   "gives every task (spark.executor.resource.gpu.amount, "
                                   "spark.task.resource.gpu.amount)",
}
_FILE_JOBS = {  # a file job's option given to a lazy API -> why it has none
    "overwrite": "the {E} engine's lazy API writes nothing: the {D} it returns is written by your own call of its "
                 "writer",
    "quiet": "the {E} engine's lazy API prints nothing: its {D} runs when you use it",
}


def what_engine_takes(option: str, engine: str) -> str:
    """What the ``engine`` engine (``"ray"`` or ``"spark"``) takes in place of the other engine's ``option``, without
    whose option it is (the command line's refusal has said so): "Spark runs as many tasks at once as ..."."""
    return (_TO_SPARK if engine == "spark" else _TO_RAY)[option].split("; ", 1)[1]


def refuse_other_engines_options(params: dict, engine: str, function: str, lazy: bool = False) -> None:
    """Refuse the other cluster engine's options given to ``function`` of the ``engine`` engine (``"ray"`` or
    ``"spark"``), and with ``lazy`` a file job's options (else the lazy API's), by name and with what to do
    instead."""
    other = _TO_SPARK if engine == "spark" else _TO_RAY
    E, D = engine.capitalize(), "DataFrame" if engine == "spark" else "Dataset"
    for option in params:
        why = other.get(option) or (_OWN_FILE_JOB if lazy else _OWN_LAZY_API).get((engine, option))
        if why is None and lazy and option in _FILE_JOBS:
            why = _FILE_JOBS[option].format(E=E, D=D)
        if why is None and engine == "spark" and lazy and option == "batch_rows":
            why = ("a DataFrame goes to the Spark engine in Arrow batches of "
                   "spark.sql.execution.arrow.maxRecordsPerBatch rows: set that option of the session")
        if why is not None:
            raise TypeError(f"{option}= is not an option of {function}: {why}; drop {option}=.")
