"""Listener-rule routing moto 5.2 lacks, filled in from AWS's ELBv2 API reference. Applied once
to the in-process moto server with `moto_fidelity`.

- `RegexValues` (`HostHeaderConditionConfig`, `PathPatternConditionConfig`,
  `HttpHeaderConditionConfig`): regular expressions instead of wildcard `Values`, each at most
  128 characters. moto reads `Values` unconditionally and answers HTTP 500 without them. Here a
  condition takes exactly one of the two (AWS refuses both with `ValidationError`), and the
  condition is stored and answered as given.
- `Transforms` (`CreateRule`, `ModifyRule`, answered by `DescribeRules`): at most one
  `host-header-rewrite` and one `url-rewrite` per rule, each with its `Rewrites` (`Regex` and
  `Replace` at most 1,024 characters). `ModifyRule` replaces them when `Transforms` is given,
  removes them with `ResetTransforms`, refuses both together, and leaves them otherwise. moto
  drops them.
"""

from __future__ import annotations

from typing import Any

_MATCHED = {"host-header": "HostHeaderConfig", "path-pattern": "PathPatternConfig",
            "http-header": "HttpHeaderConfig"}
_MAX_REGEX = 128
_MAX_REWRITE = 1024
_applied = False


def apply() -> None:
    """Patch moto's ELBv2 backend and responses (idempotent)."""
    global _applied
    if _applied:
        return
    from moto.elbv2.exceptions import ELBClientError
    from moto.elbv2.models import ELBv2Backend
    from moto.elbv2.responses import ELBV2Response

    def invalid(message: str) -> Exception:
        return ELBClientError("ValidationError", message)

    original_validate = ELBv2Backend._validate_conditions

    def validate_conditions(self: Any, conditions: list[dict[str, Any]]) -> None:
        plain: list[dict[str, Any]] = []
        for condition in conditions:
            config = condition.get(_MATCHED.get(str(condition.get("Field")), ""))
            if not isinstance(config, dict) or "RegexValues" not in config:
                plain.append(condition)
                continue
            regexes = config.get("RegexValues") or []
            if config.get("Values"):
                raise invalid("You cannot specify both 'Values' and 'RegexValues' in a "
                              f"'{condition['Field']}' condition")
            if not regexes:
                raise invalid("A condition value must be specified")
            for regex in regexes:
                if not regex or len(regex) > _MAX_REGEX:
                    raise invalid(f"The '{condition['Field']}' regex value is too long; the "
                                  f"limit is '{_MAX_REGEX}'")
            if condition["Field"] == "http-header" and len(
                    str(config.get("HttpHeaderName") or "")) > 40:
                raise invalid("The 'HttpHeaderName' value is too long; the limit is '40'")
        original_validate(self, plain)

    def checked_transforms(transforms: Any) -> list[dict[str, Any]]:
        seen: set[str] = set()
        for transform in transforms:
            kind = transform.get("Type")
            key = {"url-rewrite": "UrlRewriteConfig",
                   "host-header-rewrite": "HostHeaderRewriteConfig"}.get(str(kind))
            if key is None:
                raise invalid(f"Transform type '{kind}' must be one of "
                              "'[host-header-rewrite, url-rewrite]'")
            if kind in seen:
                raise invalid(f"A rule can have only one '{kind}' transform")
            seen.add(str(kind))
            rewrites = (transform.get(key) or {}).get("Rewrites") or []
            if not rewrites:
                raise invalid(f"A '{kind}' transform must specify '{key}.Rewrites'")
            for rewrite in rewrites:
                for part in ("Regex", "Replace"):
                    if len(str(rewrite.get(part) or "")) > _MAX_REWRITE:
                        raise invalid(f"The '{part}' value is too long; the limit is "
                                      f"'{_MAX_REWRITE}'")
                if not rewrite.get("Regex"):
                    raise invalid("A rewrite must specify 'Regex'")
        return list(transforms)

    create_original = ELBV2Response.create_rule
    modify_original = ELBV2Response.modify_rule

    def create_rule(self: Any) -> Any:
        transforms = checked_transforms(self._get_params().get("Transforms") or [])
        result = create_original(self)
        answer: Any = result.result
        answer["Rules"][0].transforms = transforms
        return result

    def modify_rule(self: Any) -> Any:
        params = self._get_params()
        given = params.get("Transforms")
        reset = params.get("ResetTransforms") in (True, "true")
        if given is not None and reset:
            raise invalid("You cannot specify both 'Transforms' and 'ResetTransforms'")
        transforms = checked_transforms(given) if given is not None else None
        result = modify_original(self)
        answer: Any = result.result
        rule = answer["Rules"][0]
        if transforms is not None:
            rule.transforms = transforms
        elif reset:
            rule.transforms = []
        return result

    ELBv2Backend._validate_conditions = validate_conditions  # type: ignore[method-assign]
    ELBV2Response.create_rule = create_rule  # type: ignore[method-assign]
    ELBV2Response.modify_rule = modify_rule  # type: ignore[method-assign]
    _applied = True
