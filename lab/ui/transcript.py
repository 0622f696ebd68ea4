"""The session's one loaded transcript, and the ways to load it: sample, upload, generator.

A transcript is stored with a label (what the sidebar shows), the format
detection chose, and a content key the caches use: ``f:`` + the hash of a
file's bytes, ``g:`` + the hash of the generator's knobs, or ``t:`` + the
hash of the transcript itself. Uploads are written under the browser
session's private folder (``session_dir``), removed with the session; an
uploaded archive of a session folder is unpacked there too, and read as
that folder (``lab.views.files.import_file``).

An upload that holds several sessions (a Goose or OpenCode store, an aider
history, an OpenHands output.jsonl, or an archive of one) keeps their list
(``session_choices``) beside the transcript; ``pick_session`` reads another of
them from the saved upload and makes it the transcript, under a key of its
own (the upload's hash and the session id), so every cached replay is that
session's. The config stays; the window is proposed again, as on any load.

Every load ends in ``set_transcript``, which also applies the window
``lab.replayer.window`` proposes for the session (counted with the active
config's counter), so a config acts at once; the user can pick any other
window on the Pipeline page.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from ..core.messages import Transcript
from ..corpus import corpus_dir, corpus_files
from ..errors import LabError, TranscriptError
from . import keys
from .proposal import proposal_for
from .reload import as_current
from .settings import get_settings, set_session_window, set_settings
from ..views.files import SessionDir, StoreSessions, import_file, import_upload, read_stored_session, sanitize_name, save_upload, store_sessions, sweep_old_dirs, temp_root
from ..views.files import sample_files as _sample_files
from ..generator import generate

if TYPE_CHECKING:  # pragma: no cover
    from ..generator import GeneratorConfig

__all__ = [
    "ROOT",
    "SAMPLES_DIR",
    "DEFAULT_SAMPLE",
    "get_transcript",
    "set_transcript",
    "clear_transcript",
    "transcript_label",
    "transcript_key",
    "transcript_format",
    "session_dir",
    "sample_files",
    "load_sample",
    "load_upload",
    "accept_upload",
    "upload_error",
    "session_choices",
    "show_session",
    "pick_session",
    "session_picked",
    "session_pick_error",
    "generate_session",
]

ROOT = Path(__file__).resolve().parents[2]
SAMPLES_DIR = ROOT / "sample_sessions"
DEFAULT_SAMPLE = "generated-small.lab.json"
# Corpus transcripts are listed after the samples under this prefix (no sample name has a slash).
_CORPUS_PREFIX = "corpus/"

# Old session folders are swept once per server process, on the first folder created.
_swept = False


# --- the transcript ---------------------------------------------------------------------------


def get_transcript() -> Transcript | None:
    stored = st.session_state.get(keys.TRANSCRIPT)
    if stored is None:
        return None
    transcript = as_current(stored, Transcript)
    if transcript is None:
        # Stored before a module reload that changed the model: it cannot be read any more, so the
        # session starts empty rather than failing on every page.
        clear_transcript()
    elif transcript is not stored:
        st.session_state[keys.TRANSCRIPT] = transcript
    return transcript


def set_transcript(transcript: Transcript, label: str, *, key: str | None = None, format: str | None = None) -> None:
    """Make ``transcript`` the session's one loaded transcript.

    ``key`` identifies its content for the caches (a hash of the uploaded bytes,
    of a sample file, or of the generator's knobs); without one it is hashed here.
    ``format`` is the importer detection chose (defaults to the transcript's own record).
    """
    st.session_state[keys.TRANSCRIPT] = transcript
    st.session_state[keys.LABEL] = label
    st.session_state[keys.FORMAT] = format or transcript.meta.source_format
    st.session_state[keys.TKEY] = key or "t:" + keys.digest(transcript.model_dump_json())
    # Request numbers of the previous transcript mean nothing for this one, nor its store's sessions.
    for stale in (keys.REQUEST, keys.SESSIONS, keys.PICK_ERROR):
        st.session_state.pop(stale, None)
    _apply_proposed_window()


def _apply_proposed_window() -> None:
    transcript = get_transcript()
    try:
        proposal = proposal_for(transcript, transcript_key() or "") if transcript is not None else None
    except LabError:
        # A counter that cannot count here (the anthropic endpoint without a key): the config keeps
        # its window, and the Session page says why there is no proposal.
        proposal = None
    set_session_window(proposal.window if proposal is not None else None)
    was = st.session_state.pop(keys.SESSION_HIDDEN, False)
    settings = get_settings()
    # Loaded with the proposal's engine (lab.ui.proposal), never with the app.
    from ..replayer.window import counts_hidden
    if proposal is not None and counts_hidden(proposal, settings):
        # The window was measured with the hidden part counted (it is larger than a window fitted to the file
        # alone): the replays count it too, from the recorded usage, or the proposed window would never fill.
        st.session_state[keys.SESSION_HIDDEN] = True
        count = True
    else:
        # A previous session's proposal turned counting on: this one did not ask for it.
        count = settings.hidden_from_usage and not was
    if count != settings.hidden_from_usage:
        set_settings(settings.model_copy(update={"hidden_from_usage": count}))


def clear_transcript() -> None:
    for k in (keys.TRANSCRIPT, keys.LABEL, keys.TKEY, keys.FORMAT, keys.REQUEST, keys.SESSIONS, keys.PICK_ERROR, keys.SESSION_HIDDEN):
        st.session_state.pop(k, None)
    set_session_window(None)


def transcript_label() -> str:
    return st.session_state.get(keys.LABEL, "")


def transcript_key() -> str | None:
    return st.session_state.get(keys.TKEY)


def transcript_format() -> str:
    """The format the importer detected (or "generated")."""
    return st.session_state.get(keys.FORMAT, "")


# --- the session's temp folder ----------------------------------------------------------------


def session_dir() -> Path:
    """This browser session's private folder (uploads, spill files); created on first use."""
    global _swept
    holder = st.session_state.get(keys.DIR)
    if holder is None or not holder.alive:
        root = temp_root()
        if not _swept:
            _swept = True
            sweep_old_dirs(root)
        holder = SessionDir(root)
        st.session_state[keys.DIR] = holder
    return holder.path


# --- loading ----------------------------------------------------------------------------------


def _sample_paths() -> dict[str, Path]:
    # Names map to paths found by listing, so a name from the browser is never joined to a folder.
    paths = {name: SAMPLES_DIR / name for name in _sample_files(SAMPLES_DIR, DEFAULT_SAMPLE)}
    folder = corpus_dir()
    if folder is not None:
        for path in corpus_files(folder):
            paths.setdefault(_CORPUS_PREFIX + path.relative_to(folder).as_posix(), path)
    return paths


def sample_files() -> list[str]:
    """The files of sample_sessions/, the one-click default first, then ``$LAB_CORPUS``'s as ``corpus/<path>``."""
    return list(_sample_paths())


@st.cache_resource(max_entries=32, show_spinner="Importing...")
def _load_sample_cached(path: str, digest: str) -> tuple[Transcript, str]:
    return import_file(Path(path))


def _content_digest(path: Path) -> str:
    """The cache key's content part: a file's bytes, or for a session kept as a folder (a corpus entry such
    as a Cline task) each file's name and bytes, so an edit anywhere in it imports it again."""
    if not path.is_dir():
        return keys.digest(path.read_bytes())
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return keys.digest("\n".join(f"{p.relative_to(path).as_posix()}:{keys.digest(p.read_bytes())}" for p in files))


def load_sample(name: str | None = None) -> Transcript:
    """Load a sample (the default one when ``name`` is None) and make it current."""
    paths = _sample_paths()
    if not paths:
        raise TranscriptError("no sample sessions found", file=str(SAMPLES_DIR))
    name = name or next(iter(paths))
    if name not in paths:
        raise TranscriptError("not a sample session", file=name, expected=f"one of: {', '.join(paths)}")
    path = paths[name]
    digest = _content_digest(path)
    transcript, fmt = _load_sample_cached(str(path), digest)
    set_transcript(transcript, name, key="f:" + digest, format=fmt)
    return transcript


def load_upload(name: str, data: bytes) -> Transcript:
    """Save uploaded bytes under the session folder with a sanitised name and import them.

    Errors name the file as the user called it, not the temp path.
    """
    return _load_upload(name, data)[0]


def _load_upload(name: str, data: bytes) -> tuple[Transcript, str]:
    # An archive is unpacked inside the session's own folder, so its files go with the session.
    path = save_upload(session_dir() / "uploads", name, data)
    return import_file(path, shown_as=name, unpack_to=session_dir() / "unpacked")


def accept_upload(name: str, data: bytes, upload_id: str | None = None) -> Transcript | None:
    """Import an upload once per file id: on success it becomes current, on failure the error is kept."""
    marker = upload_id or keys.digest(data)
    if st.session_state.get(keys.UPLOAD_ID) == marker:
        return None
    st.session_state[keys.UPLOAD_ID] = marker
    try:
        path = save_upload(session_dir() / "uploads", name, data)
        transcript, fmt, listed = import_upload(path, shown_as=name, unpack_to=session_dir() / "unpacked")
    except LabError as e:
        st.session_state[keys.UPLOAD_ERROR] = str(e)
        return None
    st.session_state.pop(keys.UPLOAD_ERROR, None)
    digest = keys.digest(data)
    store = store_sessions(path, name, digest, transcript, listed) if listed else None
    label = store.transcript_label() if store is not None else sanitize_name(name)
    set_transcript(transcript, label, key="f:" + digest, format=fmt)
    if store is not None:
        st.session_state[keys.SESSIONS] = store
    return transcript


def upload_error() -> str | None:
    return st.session_state.get(keys.UPLOAD_ERROR)


# --- picking one session of an upload that holds several --------------------------------------


def session_choices() -> StoreSessions | None:
    """The sessions of the loaded upload when it holds several (newest first, the loaded one marked), else None."""
    return st.session_state.get(keys.SESSIONS)


def show_session(widget_key: str) -> None:
    """Set the session picker under ``widget_key`` to the loaded session before it is drawn.

    So the picker always says what is loaded: after a pick that failed, and after a visit to another
    page (Streamlit forgets a widget's value while its page is not shown).
    """
    store = session_choices()
    if store is not None:
        st.session_state[widget_key] = store.shown


def pick_session(session: str) -> Transcript | None:
    """Load session ``session`` of the loaded upload; None when it is already loaded or cannot be read.

    A session that cannot be read leaves the loaded one as it is, and the error for the page
    (``session_pick_error``).
    """
    store = session_choices()
    if store is None or session == store.shown:
        return None
    try:
        transcript, fmt = read_stored_session(store, session, unpack_to=session_dir() / "unpacked")
    except LabError as e:
        st.session_state[keys.PICK_ERROR] = str(e)
        return None
    picked = store.showing(session)
    set_transcript(transcript, picked.transcript_label(), key=picked.transcript_key(session), format=fmt)
    st.session_state[keys.SESSIONS] = picked
    return transcript


def session_picked(widget_key: str) -> None:
    """``on_change`` of a session picker: load the session the widget under ``widget_key`` now holds."""
    pick_session(st.session_state[widget_key])


def session_pick_error() -> str | None:
    return st.session_state.get(keys.PICK_ERROR)


def generate_session(config: GeneratorConfig) -> Transcript:
    transcript = generate(config)
    set_transcript(
        transcript,
        f"generated (seed {config.seed}, {config.requests} requests)",
        key="g:" + keys.digest(config.model_dump_json()),
    )
    return transcript
