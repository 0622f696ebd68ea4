"""``sweep``: search a config space with Optuna's NSGA-II, scoring each trial by replaying every transcript.

    result = sweep("sessions/", "space.toml", trials=30, objectives=["cost", "needed_later_recall"])

How a run goes, and why:

- **Generations as grids.** Trials are asked one NSGA-II generation
  (``population`` trials) at a time and the whole generation is replayed in
  one ``lab.evaluation.run_grid`` call, trials x transcripts, so processes
  (or Ray, through ``ray=``) always have a full grid to share.
- **Seeded, per trial.** The sampler is rebuilt before each trial is asked,
  seeded from ``seed`` and the trial's number. NSGA-II's own state
  (generations, parents) lives in the study, and a batch never crosses a
  generation boundary, so a run repeats exactly, and a run interrupted and
  resumed draws what the uninterrupted run would have. (A study first run to
  a smaller ``trials`` and then extended repeats too, unless a trial failed
  in a generation it stopped in: failed trials do not count towards a
  generation, so its boundary moves.)
- **Resumable.** With ``study=FILE`` the trials live in an sqlite file
  (Optuna's RDB storage). ``trials`` is the total the study should hold; a
  second run with the same file continues to it. Trials asked but not scored
  when a run stopped are scored first, with their recorded values, so no
  finished trial is lost and none is drawn twice. The file remembers the
  space, objectives, base config, seed and transcripts, and refuses a resume
  that changes them.
- **Constraints.** 0 invalid requests, and 0 failures unless
  ``allow_failures``; a trial that breaks one stays in the table, marked
  infeasible, with what it broke and where (``broke``), and is never on the
  front (``Trial.set_constraint`` lets NSGA-II steer the search away from it
  too). When no trial is feasible, ``result.infeasible`` says which constraint
  every trial broke, where in which session, and what would fix it
  (``lab.replayer.explain``): "0 feasible" alone leaves the user guessing.
- **Every file accounted for.** A file that cannot be read is skipped with its
  reason (``result.skipped``, ``result.summary()``), or, with ``strict=True``,
  is an error before any trial runs.
- A trial whose config the model refuses, or whose replay fails, is an
  Optuna FAIL with its error in the table; it never stops the sweep.
- **Held out by default** (``folds``, ``lab.tuning.folds``). A config picked
  on a set of sessions scores higher there than on the next session, so the
  sessions are split into folds (5 from 10 sessions, one per session below)
  and each fold's search is its own Optuna study (``lab-sweep-fold-F-of-K``
  in the study file) that is told, and constrained by, the scores on the
  other sessions only. ``trials`` is the total over the folds. Each trial is
  still replayed on every session in its generation's grid, so the held-out
  scores cost no extra replay and the table's scores are over the whole set,
  as without folds; the trials on a fold's own Pareto front (on the sessions
  its search saw) get ``<objective>_heldout`` from the sessions it never saw,
  and the recommended (``chosen``) config is the best of those held out,
  ranked against every trial on the very sessions it was held out from.
  ``folds=0`` (or 1) is one search over every session, as before.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Mapping, Sequence

from ..core.config import CompactionConfig
from ..core.messages import Transcript
from ..errors import ConfigError, LabError, TranscriptError
from ..replayer.explain import CONSTRAINTS, blocked, broken, broken_row, broken_text
from ..evaluation.grid import run_grid
from ..evaluation.scorers import ProbeSpec
from ..replayer.settings import ReplaySettings, SettingsLike, load_split, resolve_settings
from ..replayer.inputs import ConfigLike, resolve_config
from . import folds as fold_plan
from ..evaluation.objectives import Objective, objectives as pick_objectives, scores as fold_scores, session_scores
from .progress import ProgressCallback, StderrLine, SweepProgress
from .result import SweepResult, non_dominated
from .space import SearchSpace, load_space, parse_space
from ..evaluation.batch import Batch, read_batch

__all__ = ["sweep", "load_transcripts", "resolve_space", "STUDY_NAME", "DEFAULT_POPULATION"]

STUDY_NAME = "lab-sweep"
DEFAULT_POPULATION = 10
_META = "lab.sweep"
TranscriptSource = str | os.PathLike[str] | Transcript | Iterable[str | os.PathLike[str] | Transcript]


def load_transcripts(source: TranscriptSource) -> tuple[list[Transcript], list[str], list[str]]:
    """Transcripts, their names, and one ``FILE: reason`` per file that could not be read (skipped)."""
    return _split(_read(source))


def _split(batch: Any) -> tuple[list[Transcript], list[str], list[str]]:
    transcripts = [t for _, t, _ in batch.items if t is not None]
    names = [name for name, t, _ in batch.items if t is not None]
    skipped = [f"{name}: {why}" for name, why in batch.unreadable.items()]
    if not transcripts:
        raise TranscriptError("no transcript to sweep over" + (f" (skipped: {skipped[0]})" if skipped else ""))
    return transcripts, names, skipped


def _read(source: TranscriptSource) -> Any:
    """Every item of ``source`` as a compare reads it (``read_batch``), Transcripts given as they are."""
    items: list[Any] = [source] if isinstance(source, (str, os.PathLike, Transcript)) else list(source)
    batch = Batch()
    for item in items:
        if isinstance(item, Transcript):
            batch.items.append((item.meta.source_path or item.meta.title or item.meta.session_id or f"transcript-{len(batch.items)}", item, None))
            continue
        # Read as a compare reads it: every session of a file that holds several is a transcript of the sweep.
        got = read_batch(item)
        batch.items += got.items
        batch.notes += got.notes
        batch.left_out += got.left_out
    return batch


def resolve_space(space: SearchSpace | Mapping[str, Any] | str | os.PathLike[str]) -> SearchSpace:
    """A space from itself, a parsed mapping, a .toml path, or TOML text."""
    if isinstance(space, SearchSpace):
        return space
    if isinstance(space, Mapping):
        return parse_space(space)
    if isinstance(space, os.PathLike) or (isinstance(space, str) and "\n" not in space and space.strip().endswith(".toml")):
        return load_space(Path(space))
    if isinstance(space, str):
        return parse_space(space)
    raise ConfigError(f"space must be a SearchSpace, a mapping, TOML text or a .toml path, got {type(space).__name__}")


def _base(base: ConfigLike | os.PathLike[str], window: int | None, settings: SettingsLike) -> tuple[CompactionConfig, ReplaySettings]:
    """The base config, and the replay settings: ``settings``, else those an old base file carried, else the defaults."""
    carried: ReplaySettings | None = None
    if isinstance(base, os.PathLike) or (isinstance(base, str) and Path(base).suffix.lower() in (".json", ".yaml", ".yml", ".toml")):
        base, carried, _ = load_split(Path(base))
    return resolve_config(base, window), resolve_settings(settings if settings is not None else carried)


def _storage(study: str | os.PathLike[str] | None) -> Any:
    if study is None:
        return None
    path = Path(study).expanduser().resolve()
    if path.is_dir():
        raise ConfigError(f"--study must be a file, {path} is a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LabError(f"cannot create {path.parent}: {e.strerror or e}") from None
    return f"sqlite:///{path}"


def _grid_options(processes: int, ray: str | None) -> dict[str, Any]:
    if ray is None:
        return {"processes": processes}
    if processes != 1:
        raise ConfigError("give processes or ray, not both")
    # Passed through as is: run_grid owns where jobs run.
    return {"processes": processes, "ray": ray}


def _meta(space: SearchSpace, objs: list[Objective], base: CompactionConfig, seed: int, population: int,
          allow_failures: bool, transcripts: Sequence[Transcript], names: Sequence[str]) -> dict[str, Any]:
    return {
        "space": space.to_dict(),
        "objectives": [o.name for o in objs],
        "base": base.model_dump(mode="json"),
        "seed": seed,
        "population": population,
        "allow_failures": allow_failures,
        "transcripts": [[n, len(t.messages)] for n, t in zip(names, transcripts, strict=True)],
    }


def _check_resume(stored: dict[str, Any], meta: dict[str, Any], where: str) -> None:
    for key in meta:
        if stored.get(key) != meta[key]:
            raise ConfigError(f"study {where} was run with a different {key.replace('_', ' ')}; resume it with the same settings or use a new --study file")


def _score(cells: Sequence[Any], objs: list[Objective]) -> tuple[dict[str, Any], str | None]:
    errors = [c.error for c in cells if not c.ok]
    if errors:
        return {}, errors[0]
    got = fold_scores([c.row for c in cells])
    for o in objs:
        if got[o.name] is None:
            raise ConfigError(f"objective {o.name}: no transcript in the set has this measure; pick another objective")
    return got, None


def sweep(
    transcripts: TranscriptSource,
    space: SearchSpace | Mapping[str, Any] | str | os.PathLike[str],
    *,
    trials: int = 30,
    objectives: Sequence[str] | None = None,
    base: ConfigLike | os.PathLike[str] = "lab",
    window: int | None = None,
    seed: int = 0,
    population: int = DEFAULT_POPULATION,
    allow_failures: bool = False,
    study: str | os.PathLike[str] | None = None,
    processes: int = 1,
    ray: str | None = None,
    progress: ProgressCallback | bool | None = None,
    probe: ProbeSpec | None = None,
    settings: SettingsLike = None,
    strict: bool = False,
    folds: int | None = None,
) -> SweepResult:
    """Search ``space`` for configs that do best on ``transcripts``; see the module docstring.

    ``transcripts``: a file, a folder, Transcripts, or a list of them. ``base``: the config the
    space varies (a preset name, a config, a mapping or a config file). ``progress``: a callback
    taking a ``SweepProgress``, or True for a line on stderr. ``probe``: the models that answer and grade
    probes (``lab.evaluation.ProbeSpec``); needed for the ``probe_score`` objective, and every trial then
    makes model calls. ``settings``: the ``ReplaySettings`` (or mapping) every trial is billed and timed with
    (default: what an old base config file carried under ``replay``, else the defaults). ``strict``: a
    transcript that cannot be read is a ``TranscriptError`` before any trial runs (else it is skipped, and said).
    ``folds``: how many folds to hold sessions out in (None: 5 from 10 sessions, leave-one-session-out below,
    off for a single session; 0 or 1: off); ``trials`` is then the total over the folds' searches.
    """
    import optuna

    _check_counts(trials, population, seed)
    the_space = resolve_space(space)
    objs = _objectives(objectives, probe, the_space, window)
    cfg, rs = _base(base, window, settings)
    grid = {**_grid_options(processes, ray), "settings": rs}
    batch = _read(transcripts)
    if strict:
        batch.check_strict()
    ts, names, skipped = _split(batch)
    k = fold_plan.count(len(ts), folds)
    held = fold_plan.plan(len(ts), k, seed) if k else []
    meta = {**_meta(the_space, objs, cfg, seed, population, allow_failures, ts, names), "settings": rs.model_dump(mode="json")}
    callback: ProgressCallback | None
    line = StderrLine() if progress is True else None
    callback = line if line is not None else (progress if callable(progress) else None)

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial on stderr is Optuna's default
    start = time.perf_counter()
    try:
        if not k:
            st = _open_study(study, objs, meta)
            _Generations(
                st=st, space=the_space, base=cfg, transcripts=ts, names=names, objs=objs, trials=trials,
                population=population, seed=seed, allow_failures=allow_failures, grid=grid, probe=probe,
                callback=callback, start=start,
            ).run()
            return _result(st, the_space, objs, cfg, seed, names, skipped, time.perf_counter() - start, allow_failures=allow_failures,
                           batch=batch, use_timestamps=rs.use_timestamps)
        studies = [_open_study(study, objs, {**meta, "fold": f + 1, "folds": k, "held_out": [names[i] for i in test]},
                               name=f"{STUDY_NAME}-fold-{f + 1}-of-{k}") for f, test in enumerate(held)]
        _run_folds(studies, held, fold_plan.shares(trials, k), callback, start, the_space, cfg, ts, names, objs, population, seed,
                   allow_failures, grid, probe)
        return _result(studies, the_space, objs, cfg, seed, names, skipped, time.perf_counter() - start, allow_failures=allow_failures,
                       batch=batch, use_timestamps=rs.use_timestamps, held=held)
    finally:
        optuna.logging.set_verbosity(verbosity)
        if line is not None:
            line.close()


def _check_counts(trials: int, population: int, seed: int) -> None:
    # bool is an int to isinstance, but True trials is a mistake, not 1.
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
        raise ConfigError(f"trials must be >= 1, got {trials!r}")
    if not isinstance(population, int) or isinstance(population, bool) or population < 2:
        raise ConfigError(f"population must be >= 2, got {population!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a whole number >= 0, got {seed!r}")


def _objectives(names: Sequence[str] | None, probe: ProbeSpec | None, space: SearchSpace, window: int | None) -> list[Objective]:
    """The objectives, checked against what the other arguments make possible."""
    objs = pick_objectives(names)
    if probe is None and any(o.name == "probe_score" for o in objs):
        raise ConfigError("objective probe_score needs a probe model: pass probe= (CLI: --probe-model)")
    if window is not None and "window" in space.paths:
        raise ConfigError("space field window: is swept, so it cannot also be fixed with window=/--window")
    return objs


def _run_folds(studies: list[Any], held: list[list[int]], shares: list[int], callback: ProgressCallback | None, start: float,
               space: SearchSpace, base: CompactionConfig, transcripts: list[Transcript], names: list[str], objs: list[Objective],
               population: int, seed: int, allow_failures: bool, grid: dict[str, Any], probe: ProbeSpec | None) -> None:
    """Each fold's search, one after the other, with one progress line over them all."""
    from optuna.trial import TrialState

    n = len(transcripts)
    held_before = [sum(t.state in (TrialState.COMPLETE, TrialState.FAIL) for t in st.get_trials(deepcopy=False)) for st in studies]
    ends = [max(share, before) for share, before in zip(shares, held_before, strict=True)]
    remaining = [max(0, share - before) * n for share, before in zip(shares, held_before, strict=True)]
    for f, (st, test) in enumerate(zip(studies, held, strict=True)):
        fold_callback: ProgressCallback | None = None
        if callback is not None:
            # This fold's counts, moved past the folds before it, so the line and its ETA cover the whole sweep.
            trials_before, jobs_before, outer = sum(ends[:f]), sum(remaining[:f]), callback

            def fold_callback(p: SweepProgress, trials_before: int = trials_before, jobs_before: int = jobs_before,
                              outer: ProgressCallback = outer) -> None:
                outer(SweepProgress(trials_before + p.trials_done, sum(ends), jobs_before + p.jobs_done, sum(remaining), p.elapsed))

        _Generations(
            st=st, space=space, base=base, transcripts=transcripts, names=names, objs=objs, trials=shares[f],
            population=population, seed=_fold_seed(seed, f), allow_failures=allow_failures, grid=grid, probe=probe,
            callback=fold_callback, start=start, scored=[i for i in range(n) if i not in test],
        ).run()


def _fold_seed(seed: int, fold: int) -> int:
    # Each fold draws its own trials (the same seed in every fold would propose the same first generation in each);
    # the first fold draws what a sweep without folds would.
    return seed + fold


def _open_study(study: str | os.PathLike[str] | None, objs: list[Objective], meta: dict[str, Any], name: str = STUDY_NAME) -> Any:
    """A new or resumed Optuna study; a resumed one must have been run with ``meta``."""
    import optuna

    st = optuna.create_study(
        storage=_storage(study), study_name=name, load_if_exists=True,
        directions=[o.direction for o in objs],
    )
    stored = st.user_attrs.get(_META)
    if stored is None:
        st.set_user_attr(_META, meta)
    else:
        _check_resume(stored, meta, str(study))
    return st


@dataclass
class _Generations:
    """Asks, replays and tells one NSGA-II generation at a time until the study holds ``trials``."""

    st: Any
    space: SearchSpace
    base: CompactionConfig
    transcripts: list[Transcript]
    names: list[str]
    objs: list[Objective]
    trials: int
    population: int
    seed: int
    allow_failures: bool
    grid: dict[str, Any]
    probe: ProbeSpec | None
    callback: ProgressCallback | None
    start: float
    jobs_total: int = 0
    # The sessions the search is told and constrained by (indices); None: all. Every session is replayed either way.
    scored: list[int] | None = None

    def run(self) -> None:
        from optuna.trial import Trial, TrialState

        st, per_trial = self.st, len(self.transcripts)
        all_trials = st.get_trials(deepcopy=False)
        finished = sum(t.state in (TrialState.COMPLETE, TrialState.FAIL) for t in all_trials)
        stale = [t for t in all_trials if t.state == TrialState.RUNNING]
        self.jobs_total = max(0, self.trials - finished) * per_trial
        jobs_done = 0
        while finished < self.trials:
            # A batch never crosses a generation boundary, so a resumed run batches as the uninterrupted one did.
            size = min(self.population - finished % self.population, self.trials - finished)
            # Trials a stopped run asked but never scored come first, with the values they were given.
            batch: list[Any] = [Trial(st, t._trial_id) for t in stale[:size]]
            stale = stale[size:]
            batch += self._ask(size - len(batch))
            configs, valid = self._configs(batch)
            jobs_done += (len(batch) - len(valid)) * per_trial
            cells = self._replay(configs, finished, jobs_done)
            jobs_done += len(configs) * per_trial
            self._tell(valid, cells)
            finished += len(batch)
            self._report(finished, jobs_done)

    def _ask(self, n: int) -> list[Any]:
        from optuna.samplers import NSGAIISampler

        dists = self.space.distributions()
        asked = []
        for _ in range(n):
            # Seeded per trial number: what a trial draws depends on the seed and the study, not on this process.
            number = len(self.st.get_trials(deepcopy=False))
            self.st.sampler = NSGAIISampler(population_size=self.population, seed=(self.seed * 1_000_003 + number) % 2**32)
            asked.append(self.st.ask(dists))
        return asked

    def _configs(self, batch: list[Any]) -> tuple[list[CompactionConfig], list[Any]]:
        """Each trial's config, and the trials that have one; a trial the config model refuses fails here."""
        configs: list[CompactionConfig] = []
        valid: list[Any] = []
        for trial in batch:
            try:
                configs.append(self.space.apply(self.base, trial.params).model_copy(update={"label": f"trial-{trial.number}"}))
                valid.append(trial)
            except ConfigError as e:
                _fail(self.st, trial, str(e))
        return configs, valid

    def _replay(self, configs: list[CompactionConfig], finished: int, jobs_done: int) -> list[Any]:
        if not configs:
            return []
        per_trial = len(self.transcripts)

        def tick(done: int, total: int) -> None:
            # finished and jobs_done are this generation's starting counts (arguments, so fixed per call).
            if self.callback is not None:
                self.callback(SweepProgress(finished + done // per_trial, self.trials, jobs_done + done, self.jobs_total,
                                            time.perf_counter() - self.start))

        return run_grid(self.transcripts, configs, names=self.names, labels=[c.label for c in configs], progress=tick,
                        probe=self.probe, **self.grid)

    def _tell(self, valid: list[Any], cells: list[Any]) -> None:
        # run_grid gives one row of cells per config, and each valid trial has one config.
        for trial, row_cells in zip(valid, cells, strict=True):
            got, error = _score(row_cells, self.objs)
            if error is not None:
                _fail(self.st, trial, error)
                continue
            trial.set_user_attr("scores", got)
            # What it broke and where, while the rows (each with its first invalid / failed request) are at hand.
            found = broken([c.row for c in row_cells], _constraints(self.allow_failures))
            if found:
                trial.set_user_attr("broke", found)
            told = got
            if self.scored is not None:
                # Kept per session, so the held-out sessions can be scored apart; the search sees only the others.
                trial.set_user_attr("sessions", [session_scores(c.row) for c in row_cells])
                told = fold_scores([row_cells[i].row for i in self.scored])
            # Set before ``tell``: NSGA-II ranks infeasible trials (a value > 0) behind every feasible one.
            trial.set_constraint("invalid_requests", float(told["invalid_requests"] or 0.0))
            if not self.allow_failures:
                trial.set_constraint("failures", float(told["failures"] or 0.0))
            self.st.tell(trial, [float(told[o.name] or 0.0) for o in self.objs])  # _score checked that none is None over the set

    def _report(self, finished: int, jobs_done: int) -> None:
        if self.callback is not None:
            self.callback(SweepProgress(finished, self.trials, jobs_done, self.jobs_total, time.perf_counter() - self.start))


def _fail(st: Any, trial: Any, error: str) -> None:
    from optuna.trial import TrialState

    trial.set_user_attr("error", error.splitlines()[0] if error else "failed")
    st.tell(trial, state=TrialState.FAIL)


def _constraints(allow_failures: bool) -> tuple[str, ...]:
    return tuple(c for c in CONSTRAINTS if not (allow_failures and c == "failures"))


def _why_none(records: list[dict[str, Any]], broke: dict[int, dict[str, Any]], allow_failures: bool) -> str | None:
    """Why no trial is feasible: the constraint every scored trial broke (where, and the fix), or the error every trial
    failed with; None when some trial is feasible (or there are none)."""
    if not records or any(r["feasible"] for r in records):
        return None
    done = [r for r in records if r["state"] == "complete"]
    if not done:
        errors = [str(r["error"]) for r in records if r.get("error")]
        common = max(set(errors), key=errors.count) if errors else "no error recorded"
        return f"all {len(records)} trial(s) failed; the most common error: {common}"
    stuck = blocked([broken_row(r["trial"], broke.get(r["trial"], {})) for r in done], _constraints(allow_failures), by="trial",
                    allow_failures_hint=not allow_failures)
    if stuck is not None:
        return stuck.text
    # Each trial broke some constraint, not the same one: name each constraint's first place.
    kinds = sorted({c for r in done for c in broke.get(r["trial"], {})})
    return (f"each of the {len(done)} scored trial(s) broke a constraint, not all the same one ({', '.join(kinds) or 'unrecorded'}): "
            "see the broke column")


def _result(st: Any, space: SearchSpace, objs: list[Objective], base: CompactionConfig, seed: int,
            names: list[str], skipped: list[str], seconds: float, *, allow_failures: bool = False, batch: Any = None,
            use_timestamps: bool = True, held: list[list[int]] | None = None) -> SweepResult:
    """The result of one study (``st``), or of the folds' studies (a list, with ``held``: each fold's held-out sessions).

    A fold's trials are numbered after the folds before it, so every trial of the table has its own number.
    """
    from optuna.trial import TrialState

    studies = st if isinstance(st, list) else [st]
    records: list[dict[str, Any]] = []
    broke: dict[int, dict[str, Any]] = {}
    for f, one in enumerate(studies):
        test = held[f] if held else None
        fold_records: list[dict[str, Any]] = []
        for t in one.get_trials(deepcopy=False):
            if t.state not in (TrialState.COMPLETE, TrialState.FAIL):
                continue
            number = len(records) + len(fold_records)
            scores = t.user_attrs.get("scores", {})
            done = t.state == TrialState.COMPLETE
            # With folds the sampler was constrained on the sessions its fold saw; the table's feasibility is over the whole set.
            feasible = done and (_keeps(scores, allow_failures) if test is not None else all(c <= 0 for c in t.constraints.values()))
            record: dict[str, Any] = {
                "trial": number,
                "fold": f + 1 if test is not None else None,
                "state": "complete" if done else "failed",
                "feasible": feasible,
                "error": t.user_attrs.get("error"),
                "broke": broken_text(t.user_attrs.get("broke", {})),
                **scores,
            }
            record.update({p: t.params.get(p) for p in space.paths})
            if test is not None and done:
                rows = t.user_attrs.get("sessions") or []
                if len(rows) == len(names):
                    record["_rows"] = rows
                    record["_insample"] = fold_scores([r for i, r in enumerate(rows) if i not in test], scale_to=len(names))
                    record["_heldout"] = fold_scores([rows[i] for i in test], scale_to=len(names))
            broke[number] = t.user_attrs.get("broke", {})
            fold_records.append(record)
        if test is not None:
            _mark_fold_front(fold_records, objs, allow_failures)
        records += fold_records
    if held:
        _rank_held_out(records, held, objs)
    return SweepResult(
        records=records, objectives=[o.name for o in objs], params=space.paths, base=base.model_dump(mode="json"),
        seed=seed, transcripts=list(names), skipped=list(skipped), seconds=seconds,
        infeasible=_why_none(records, broke, allow_failures),
        listed=[name for name, _, _ in batch.items] if batch is not None else list(names),
        left_out=list(batch.left_out) if batch is not None else [],
        unreadable=dict(batch.unreadable) if batch is not None else {},
        warnings=batch.warnings(use_timestamps=use_timestamps) if batch is not None else {},
        folds=len(held or []), held_out=[[names[i] for i in test] for test in held or []],
    )


def _rank_held_out(records: list[dict[str, Any]], held: list[list[int]], objs: list[Objective]) -> None:
    """Give each held-out-scored trial ``<objective>_heldout_rank``: on its held-out sessions, the share of all the sweep's
    trials it does at least as well as (1: none does better), averaged over those sessions.

    Folds hold out different sessions, and a session's cost follows its length: comparing raw held-out scores across
    folds would recommend the fold whose held-out sessions are cheapest. Every trial is replayed on every session, so
    each can be ranked against all on the very sessions it was held out from.
    """
    scored = [r for r in records if "_heldout" in r]
    rows = [r.get("_rows") for r in scored]
    pool = [r["_rows"] for r in records if r.get("_rows")]
    for r, mine in zip(scored, rows, strict=True):
        if not mine or r.get(f"{objs[0].name}_heldout") is None:
            continue
        test = held[int(r["fold"]) - 1]
        for o in objs:
            sign = 1.0 if o.direction == "minimize" else -1.0
            shares = []
            for i in test:
                value = mine[i].get(o.name)
                others = [v for other in pool if (v := other[i].get(o.name)) is not None]
                if value is None or not others:
                    continue
                shares.append(sum(1 for v in others if sign * (value - v) <= 1e-12 * max(1.0, abs(v))) / len(others))
            r[f"{o.name}_heldout_rank"] = sum(shares) / len(shares) if shares else None


def _keeps(scores: dict[str, Any], allow_failures: bool) -> bool:
    """Whether scores break no constraint: 0 invalid requests, and 0 failures unless they are allowed."""
    return not (scores.get("invalid_requests") or 0) and (allow_failures or not (scores.get("failures") or 0))


def _mark_fold_front(records: list[dict[str, Any]], objs: list[Objective], allow_failures: bool) -> None:
    """Give the trials on a fold's own front (feasible and non-dominated on the sessions its search saw) their held-out scores.

    Only the front: those are the configs the fold's search would offer, and choosing among more of them on the
    held-out sessions would be choosing on the sessions held out.
    """
    sign = {o.name: 1.0 if o.direction == "minimize" else -1.0 for o in objs}
    ok = [r for r in records if "_insample" in r and _keeps(r["_insample"], allow_failures)
          and all(r["_insample"].get(o.name) is not None for o in objs)]
    for i in non_dominated([[sign[o.name] * float(r["_insample"][o.name]) for o in objs] for r in ok]):
        r = ok[i]
        for o in objs:
            r[f"{o.name}_heldout"] = r["_heldout"].get(o.name)
        r["_heldout_keeps"] = _keeps(r["_heldout"], allow_failures)
