"""The in-process binding (spec §8.1): a store opened in this process
through liba2m, called with ctypes.

Messages cross as JSON strings exactly as they would cross a pipe (§8.1
recommends it: a local server that accepted Python objects a remote one
never could would disagree with the network in production). Notifications
come through the callback liba2m calls from inside a2m_handle(), on the
calling thread, after the change they report — so push works here as on
stdio.

Written against liba2m's configuration API (a2m_config_new / _set / _free,
a2m_open, a2m_handle with a length and an out-parameter, a2m_set_notify,
a2m_close, a2m_free, a2m_strerror). The library is found at ``library``, or
$A2M_LIBRARY, or by ctypes.util.find_library("a2m").
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import threading
from typing import Any, Callable, Mapping, Optional

from ._listeners import CloseListener, Listeners, Message, NotificationListener, classify
from .errors import TransportError

_NOTIFY = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


def load_library(path: Optional[str] = None) -> ctypes.CDLL:
    """Loads liba2m and declares the functions used here. Raises
    TransportError when it cannot be found or lacks one of them."""
    name = path or os.environ.get("A2M_LIBRARY") or ctypes.util.find_library("a2m")
    if not name:
        raise TransportError("liba2m not found: pass library=, or set A2M_LIBRARY to liba2m.so")
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        raise TransportError(f"cannot load {name}: {e}") from e
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures = {
        "a2m_config_new": (i, [ctypes.POINTER(vp)]),
        "a2m_config_set": (i, [vp, cp, cp]),
        "a2m_config_free": (None, [vp]),
        "a2m_open": (i, [vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]),
        "a2m_handle": (i, [vp, cp, ctypes.c_size_t, ctypes.POINTER(vp)]),
        "a2m_set_notify": (None, [vp, _NOTIFY, vp]),
        "a2m_close": (None, [vp]),
        "a2m_free": (None, [vp]),
        "a2m_strerror": (cp, [i]),
    }
    for fname, (restype, argtypes) in signatures.items():
        try:
            fn = getattr(lib, fname)
        except AttributeError as e:
            raise TransportError(f"{name} has no {fname}: a liba2m older than this client") from e
        fn.restype = restype
        fn.argtypes = argtypes
    # Optional: why the last a2m_config_set failed, in words.
    if hasattr(lib, "a2m_config_errmsg"):
        lib.a2m_config_errmsg.restype = cp
        lib.a2m_config_errmsg.argtypes = [vp]
    return lib


class InProcessTransport:
    """Opens a store with liba2m in this process.

    engine: "memory" (default) or "sqlite"; path: the SQLite file;
    capabilities: e.g. "core,tiers,keys"; config: any other a2m_config_set
    names and values. Raises TransportError with liba2m's message when the
    store cannot be opened. Calls run on the calling thread; liba2m's handle
    is safe to share between threads. There is no timeout: a call returns
    when the store has done it.
    """

    push = True

    def __init__(
        self,
        *,
        library: Optional[str] = None,
        engine: str = "memory",
        path: Optional[str] = None,
        capabilities: Optional[str] = None,
        config: Optional[Mapping[str, str]] = None,
    ) -> None:
        self._lib = load_library(library)
        self._listeners = Listeners()
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        settings = {"engine": engine}
        if path is not None:
            settings["path"] = path
        if capabilities is not None:
            settings["capabilities"] = capabilities
        settings.update(config or {})
        cfg = ctypes.c_void_p()
        self._check(self._lib.a2m_config_new(ctypes.byref(cfg)), "a2m_config_new")
        try:
            for name, value in settings.items():
                rc = self._lib.a2m_config_set(cfg, name.encode(), str(value).encode())
                if rc != 0:
                    why = self._config_errmsg(cfg) or self._strerror(rc)
                    raise TransportError(f"a2m_config_set {name}={value!r}: {why}")
            handle = ctypes.c_void_p()
            errmsg = ctypes.c_void_p()
            rc = self._lib.a2m_open(cfg, ctypes.byref(handle), ctypes.byref(errmsg))
            if rc != 0:
                detail = self._take_string(errmsg) or self._strerror(rc)
                raise TransportError(f"a2m_open: {detail}")
        finally:
            self._lib.a2m_config_free(cfg)
        self._handle = handle.value
        # Kept on self: ctypes does not keep a callback alive for the library.
        self._callback = _NOTIFY(self._on_notify)
        self._lib.a2m_set_notify(self._handle, self._callback, None)

    def request(self, message: Message, timeout: Any = ..., repeatable: bool = False) -> Message:
        """Hands one request to the store and returns its response dict."""
        reply = self._handle_message(message)
        if reply is None:
            raise TransportError(f"{message.get('method')}: the store answered a request with nothing")
        response = json.loads(reply)
        if classify(response) != "response":
            raise TransportError(f"{message.get('method')}: the store's answer is not a response")
        return response

    def notify(self, message: Message) -> None:
        """Hands a notification to the store (no answer)."""
        self._handle_message(message)

    def on_notification(self, fn: NotificationListener) -> Callable[[], None]:
        """fn(message) is called for every notification, on the thread whose
        call caused it, before that call returns."""
        return self._listeners.on_notification(fn)

    def on_close(self, fn: CloseListener) -> Callable[[], None]:
        return self._listeners.on_close(fn)

    def close(self) -> Optional[int]:
        """Commits and closes the store. Safe to call twice."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            self._lib.a2m_set_notify(handle, _NOTIFY(), None)  # NULL: stop
            self._lib.a2m_close(handle)
            self._listeners.closed(TransportError("the transport is closed"), True)
        return 0

    def _handle_message(self, message: Message) -> Optional[str]:
        handle = self._handle
        if handle is None:
            raise TransportError("the transport is closed")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        reply = ctypes.c_void_p()
        rc = self._lib.a2m_handle(handle, data, len(data), ctypes.byref(reply))
        if rc < 0:
            raise TransportError(f"a2m_handle: {self._strerror(rc)}")
        return self._take_string(reply)

    def _on_notify(self, notification: Optional[bytes], user: Any) -> None:
        if not notification:
            return
        try:
            message = json.loads(notification)
        except ValueError:
            return
        if classify(message) == "notification":
            self._listeners.notify(message)

    def _take_string(self, ptr: ctypes.c_void_p) -> Optional[str]:
        if not ptr.value:
            return None
        try:
            return ctypes.string_at(ptr.value).decode("utf-8")
        finally:
            self._lib.a2m_free(ptr)

    def _strerror(self, rc: int) -> str:
        s = self._lib.a2m_strerror(rc)
        return s.decode("utf-8", "replace") if s else f"error {rc}"

    def _config_errmsg(self, cfg: ctypes.c_void_p) -> str:
        if not hasattr(self._lib, "a2m_config_errmsg"):
            return ""
        s = self._lib.a2m_config_errmsg(cfg)
        return s.decode("utf-8", "replace") if s else ""

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise TransportError(f"{what}: {self._strerror(rc)}")

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
