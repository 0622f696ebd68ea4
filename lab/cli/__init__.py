"""The command line, ``python -m lab VERB`` (and the ``compaction-lab`` script).

    main.py         the parser and the dispatch: a LabError is one ``error:`` line and exit 2
    common.py       what the verbs share: the parser class, --session, --no-redact, the probe options,
                    how import warnings and notes are printed
    settings.py     what a verb runs with: --config / --preset and --settings
    transcripts.py  import, export, tokens, sessions
    configs.py      presets, config
    replay.py       replay, compare
    probe.py        probe
    sweep.py        sweep
    serve.py        serve
    bench.py        bench

The arrows point down: ``main`` imports the verb modules, the verb modules import ``common`` and
``settings`` and the layers below, and nothing here imports ``main``. Run it with
``lab.cli.main.main(argv)``.
"""

__all__: list[str] = []
