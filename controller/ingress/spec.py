"""The shape of an Ingress spec (networking.k8s.io/v1) as the model builder reads it, checked
before anything is built. A real API server enforces it; a server that does not (or an object
stored another way) must not make the builder raise anything but one clear `BuildError`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Port(_Shape):
    number: StrictInt | None = None
    name: StrictStr | None = None


class _ServiceBackend(_Shape):
    name: StrictStr
    port: _Port | None = None


class _Backend(_Shape):
    service: _ServiceBackend | None = None
    resource: dict[str, Any] | None = None


class _Path(_Shape):
    path: StrictStr | None = None
    pathType: StrictStr | None = None
    backend: _Backend


class _Http(_Shape):
    paths: list[_Path]


class _Rule(_Shape):
    host: StrictStr | None = None
    http: _Http | None = None


class _Tls(_Shape):
    hosts: list[StrictStr] | None = None
    secretName: StrictStr | None = None


class IngressSpecShape(_Shape):
    ingressClassName: StrictStr | None = None
    defaultBackend: _Backend | None = None
    rules: list[_Rule] | None = None
    tls: list[_Tls] | None = None


def check_spec(ing: dict[str, Any]) -> str | None:
    """None when the spec has the API's shape, else one line naming the first wrong field."""
    spec = ing.get("spec", {})
    if spec is None:
        return None
    try:
        IngressSpecShape.model_validate(spec)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "spec" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                 for p in first.get("loc", ()))
        return f"{where}: {first.get('msg', 'invalid')}"
    return None


__all__ = ["IngressSpecShape", "check_spec"]
