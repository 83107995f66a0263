"""Per-deploy state shared by the synthesizers: the reader and the caller, tracking tags,
resolved `$ref`s, and whether write-only fields must be written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.aws import Caller, Reader
from controller.deploy.errors import DeployError
from controller.deploy.tags import Tracking
from controller.model import Action, Ref, Stack, carries_write_only
from controller.model.base import MAX_TAGS


@dataclass
class DeployRun:
    stack: Stack
    # Lookups (load balancers, target groups, tags, security groups) go through the reader,
    # everything else through its caller (`calls`), which counts the deploy's calls.
    reader: Reader
    tracking: Tracking
    # AWS never returns write-only fields (an OIDC client secret), so they cannot be compared:
    # when set, every listener and rule carrying one is written whatever the comparison says.
    # The reconcilers set it unless the object's checkpoint matched the stack being deployed.
    rewrite_write_only: bool = True
    # (resource type, resource id, status field) → value, filled as resources converge.
    status: dict[tuple[str, str, str], str] = field(default_factory=dict)
    # (reason, message): what the deploy left as it is although the model asks otherwise,
    # for the owners' Warning Events.
    warnings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def calls(self) -> Caller:
        return self.reader.caller

    @property
    def vpc_id(self) -> str:
        return self.stack.context.vpc_id

    def must_write(self, actions: Sequence[Action]) -> bool:
        """True if `actions` hold write-only fields this run has to write anyway."""
        return self.rewrite_write_only and carries_write_only(actions)

    def warn(self, reason: str, message: str) -> None:
        if (reason, message) not in self.warnings:
            self.warnings.append((reason, message))

    def resolve(self, ref: Ref) -> str:
        try:
            return self.status[ref.target]
        except KeyError:
            raise DeployError(f"{ref.ref} is not known yet (dependency not deployed)") from None

    def set_status(self, resource_type: str, resource_id: str, field_name: str,
                   value: str) -> None:
        self.status[(resource_type, resource_id, field_name)] = value

    @property
    def tags_listeners(self) -> bool:
        """The ListenerRulesTagging gate, carried by the stack: off, listeners and rules are
        created untagged, their tags are neither read nor converged (upstream)."""
        return self.stack.context.listener_rules_tagging

    def desired_tags(self, resource_id: str, model_tags: dict[str, str]) -> dict[str, str]:
        """The model's tags (default tags already merged in by the builder) plus tracking."""
        tags = self.tracking.tags_for(resource_id, model_tags)
        if len(tags) > MAX_TAGS:
            raise DeployError(f"{resource_id}: {len(tags)} tags with the tracking tags; AWS "
                              f"allows {MAX_TAGS}")
        return tags
