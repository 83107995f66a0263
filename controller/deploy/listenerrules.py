"""Listener rule convergence. Rules are matched to the model by their resource tag, so a
reordering is a priority move, not a rewrite of every rule's content; untagged rules
(ListenerRulesTagging off) by content, then by priority, as upstream."""

from __future__ import annotations

from typing import Any

from controller.aws import AWSError
from controller.deploy.deployrun import DeployRun
from controller.deploy.normalize import (
    api_actions,
    api_condition,
    api_transforms,
    normal_actions,
    normal_conditions,
    normal_transforms,
)
from controller.deploy.tags import as_api_tags, converge_tags
from controller.model import LISTENER_RULE, ListenerRule

MAX_PRIORITY = 50000


async def list_rules(run: DeployRun, listener_arn: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    async for page in run.calls.paginate("DescribeRules", ListenerArn=listener_arn):
        found.extend(r for r in page.get("Rules", []) if not r.get("IsDefault"))
    return found


async def converge_rules(run: DeployRun, listener_arn: str, wanted: dict[str, ListenerRule],
                         current: list[dict[str, Any]],
                         tags: dict[str, dict[str, str]]) -> dict[str, str]:
    if run.tags_listeners:
        matched, stale = _match_by_tag(run, wanted, current, tags)
    else:
        matched, stale = _match_untagged(run, wanted, current)
    # Deletions first: a stale rule may hold a priority a wanted rule needs.
    for arn in stale:
        await delete_rule(run, arn)
    await _move(run, matched, wanted)
    arns: dict[str, str] = {}
    for rid, rule in matched.items():
        model = wanted[rid]
        conditions = [api_condition(c) for c in model.conditions]
        actions = api_actions(model.actions, run.resolve)
        transforms = api_transforms(model.transforms)
        transformed: dict[str, Any] = {}
        if normal_transforms(rule.get("Transforms")) != normal_transforms(transforms):
            # AWS keeps a rule's transforms unless told: new ones, or none (ResetTransforms).
            transformed = ({"Transforms": transforms} if transforms
                           else {"ResetTransforms": True})
        if (normal_conditions(rule.get("Conditions", [])) != normal_conditions(conditions)
                or normal_actions(rule.get("Actions", [])) != normal_actions(actions)
                or transformed or run.must_write(model.actions)):
            await run.calls.call("ModifyRule", RuleArn=rule["RuleArn"], Conditions=conditions,
                                 Actions=actions, **transformed)
        if run.tags_listeners:
            await converge_tags(run.calls, run.tracking, rule["RuleArn"],
                                tags.get(rule["RuleArn"], {}),
                                run.desired_tags(rid, model.tags))
        arns[rid] = rule["RuleArn"]
    for rid in sorted(set(wanted) - set(matched), key=lambda r: wanted[r].priority):
        model = wanted[rid]
        extra: dict[str, Any] = (
            {"Transforms": api_transforms(model.transforms)} if model.transforms else {})
        if run.tags_listeners:
            extra["Tags"] = as_api_tags(run.desired_tags(rid, model.tags))
        resp = await run.calls.call(
            "CreateRule", ListenerArn=listener_arn, Priority=model.priority,
            Conditions=[api_condition(c) for c in model.conditions],
            Actions=api_actions(model.actions, run.resolve), **extra)
        arns[rid] = resp["Rules"][0]["RuleArn"]
    for rid, arn in arns.items():
        run.set_status(LISTENER_RULE, rid, "ruleARN", arn)
    return arns


def _match_by_tag(run: DeployRun, wanted: dict[str, ListenerRule],
                  current: list[dict[str, Any]], tags: dict[str, dict[str, str]],
                  ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(wanted rule id → its rule in AWS, ARNs of rules nothing wants) by resource tag."""
    matched: dict[str, dict[str, Any]] = {}
    stale: list[str] = []
    for rule in sorted(current, key=lambda r: int(r["Priority"])):
        rid = run.tracking.resource_id(tags.get(rule["RuleArn"], {}))
        if rid is not None and rid in wanted and rid not in matched:
            matched[rid] = rule
        else:
            stale.append(rule["RuleArn"])
    return matched, stale


def _match_untagged(run: DeployRun, wanted: dict[str, ListenerRule],
                    current: list[dict[str, Any]],
                    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Untagged rules (ListenerRulesTagging off) are matched as upstream matches them: first
    a rule whose conditions, actions and transforms are the wanted rule's (at most a priority
    move), then, among the rest, the rule on the wanted priority (modified in place, so the
    path never answers 404 in between)."""
    matched: dict[str, dict[str, Any]] = {}
    left = sorted(current, key=lambda r: int(r["Priority"]))
    for rid in sorted(wanted, key=lambda r: wanted[r].priority):
        model = wanted[rid]
        want = (normal_conditions([api_condition(c) for c in model.conditions]),
                normal_actions(api_actions(model.actions, run.resolve)),
                normal_transforms(api_transforms(model.transforms)))
        for rule in left:
            if (normal_conditions(rule.get("Conditions", [])),
                    normal_actions(rule.get("Actions", [])),
                    normal_transforms(rule.get("Transforms"))) == want:
                matched[rid] = rule
                left.remove(rule)
                break
    by_priority = {int(rule["Priority"]): rule for rule in left}
    for rid in sorted(set(wanted) - set(matched)):
        if wanted[rid].priority in by_priority:
            matched[rid] = by_priority.pop(wanted[rid].priority)
    return matched, [rule["RuleArn"] for rule in by_priority.values()]


async def _move(run: DeployRun, matched: dict[str, dict[str, Any]],
                wanted: dict[str, ListenerRule]) -> None:
    """Move rules to their wanted priorities. AWS accepts a swap in one SetRulePriorities call,
    moto does not: rules sitting on a priority another rule moves to are first parked on free
    temporary priorities, then everything moves in one call. Crashing in between leaves rules
    parked, which the next run moves like any other misplaced rule."""
    have = {rid: int(rule["Priority"]) for rid, rule in matched.items()}
    movers = {rid: wanted[rid].priority for rid in matched if have[rid] != wanted[rid].priority}
    if not movers:
        return
    finals = set(movers.values())
    blocking = sorted(rid for rid in movers if have[rid] in finals)
    if blocking:
        taken = set(have.values()) | {r.priority for r in wanted.values()}
        free = (p for p in range(MAX_PRIORITY, 0, -1) if p not in taken)
        await run.calls.call("SetRulePriorities", RulePriorities=[
            {"RuleArn": matched[rid]["RuleArn"], "Priority": next(free)} for rid in blocking])
    await run.calls.call("SetRulePriorities", RulePriorities=[
        {"RuleArn": matched[rid]["RuleArn"], "Priority": prio}
        for rid, prio in sorted(movers.items())])


async def delete_rule(run: DeployRun, arn: str) -> None:
    try:
        await run.calls.call("DeleteRule", RuleArn=arn)
    except AWSError as exc:
        if not exc.is_not_found:
            raise
