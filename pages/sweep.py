"""Sweep: search the config space on chosen sessions, see the Pareto front, load a point as the current config."""

import streamlit as st

from lab import figures
from lab.errors import LabError
from lab.tuning import DEFAULT_OBJECTIVES, OBJECTIVES
from lab.ui.sweep import example_space, load_selection, load_sweep_trial, run_sweep, sweep_result, sweep_sources
from lab.views.markdown import literal_markdown

st.title("Sweep")
st.caption("Each trial is one config (the current config with the space's fields changed), scored by replaying every picked session.")

sources = sweep_sources()
picked = st.multiselect("Sessions to sweep over", sources, default=sources[:1], key="sweep.sources")
space = st.text_area("Space (TOML): config fields and their ranges or choices", value=example_space(), height=300, key="sweep.space")
objectives = st.multiselect(
    "Objectives", list(OBJECTIVES), default=list(DEFAULT_OBJECTIVES), key="sweep.objectives",
    help="; ".join(f"{o.name}: {o.help} ({o.direction})" for o in OBJECTIVES.values()),
)
left, mid, right, last = st.columns(4)
trials = left.number_input("Trials", min_value=1, max_value=1000, value=20, step=1, key="sweep.trials",
                           help="The total over the folds: each fold's search gets its share.")
population = mid.number_input("Population (trials per generation)", min_value=2, max_value=200, value=10, step=1, key="sweep.population")
seed = right.number_input("Seed", min_value=0, max_value=2**31, value=0, step=1, key="sweep.seed")
folds = last.number_input(
    "Folds (0: auto)", min_value=0, max_value=100, value=0, step=1, key="sweep.folds",
    help="Held-out scoring: each fold's search runs on the other sessions and its front is scored on the fold's sessions. "
    "0 picks 5 folds from 10 sessions, one per session below; 1 turns it off.",
)
allow = st.checkbox("Allow failed requests (invalid requests stay forbidden)", value=False, key="sweep.allow_failures")

if st.button("Run sweep", key="sweep.run", type="primary"):
    bar = st.progress(0.0, text="starting...")
    try:
        run_sweep(picked, space, objectives, int(trials), population=int(population), seed=int(seed), allow_failures=allow,
                        progress=lambda p: bar.progress(p.fraction, text=p.text()), folds=int(folds) or None)
        bar.progress(1.0, text="done")
    except LabError as e:
        st.error(str(e).splitlines()[0] if str(e) else type(e).__name__)

result = sweep_result()
if result is None:
    st.info("Pick sessions, edit the space and run a sweep.")
    st.stop()

df = result.df
st.text(f"{len(df)} trial(s) over {len(result.transcripts)} session(s) in {result.seconds:.1f} s: "
        f"{int(df['feasible'].sum())} feasible, {int(df['pareto'].sum())} on the Pareto front.")
if result.infeasible is not None:
    # "0 feasible" alone leaves the user guessing: which constraint every trial broke, where, and the fix.
    st.warning(literal_markdown(f"No feasible trial: {result.infeasible}"))
for skipped in result.skipped:
    st.error(literal_markdown(f"not swept: {skipped}"))
if result.folds:
    st.text(f"Held out in {result.folds} folds, each fold's search on the other sessions: "
            + "; ".join(f"fold {f}: {', '.join(out)}" for f, out in enumerate(result.held_out, 1)))
# st.text: "in-sample X, held-out Y" names sessions, which must not become markdown.
st.text(result.recommendation())
chosen = result.chosen
if chosen is not None and st.button(f"Load the recommended trial ({int(chosen['trial'])}) as current config", key="sweep.load_chosen"):
    load_sweep_trial(int(chosen["trial"]))
    st.success(f"trial {int(chosen['trial'])} is now the current config (see Pipeline)")
scores = [o for o in OBJECTIVES if o in df.columns]
ax_x, ax_y = st.columns(2)
x = ax_x.selectbox("x", scores, index=scores.index(result.objectives[0]), key="sweep.x")
y_default = result.objectives[1] if len(result.objectives) > 1 else next(s for s in scores if s != x)
y = ax_y.selectbox("y", scores, index=scores.index(y_default), key="sweep.y")
event = st.plotly_chart(figures.pareto(df, x, y), on_select="rerun", selection_mode="points", key="sweep.chart")
try:
    loaded = load_selection(event)
except LabError as e:
    st.error(str(e))
    loaded = None
if loaded is not None:
    st.success(f"trial {loaded} is now the current config (see Pipeline)")

st.subheader("Pareto front")
st.dataframe(result.pareto.drop(columns=["pareto", "error", "broke"]), hide_index=True, key="sweep.front")
front = [int(t) for t in result.pareto["trial"]]
if front:
    pick = st.selectbox("Trial to load", front, key="sweep.trial")
    if st.button("Load as current config", key="sweep.load"):
        load_sweep_trial(int(pick))
        st.success(f"trial {pick} is now the current config (see Pipeline)")
with st.expander("Every trial"):
    st.dataframe(df, hide_index=True, key="sweep.all")
