"""Cognito authentication and JWT validation (upstream v3.5.0): parsing with Go's
encoding/json key matching, upstream's defaults and messages, AWS's limits, and where the
actions go in the stack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.annotations import AnnotationError
from controller.deploy.normalize import api_action, normal_action
from controller.ingress.annotations import parse_auth, parse_ingress
from controller.ingress.merge import BuildError
from controller.ingress.model import BuiltGroup, build_group
from controller.model import (
    AuthenticateCognitoAction,
    AuthenticateOidcAction,
    FixedResponseAction,
    ForwardAction,
    JwtClaim,
    JwtValidationAction,
    canonical_json,
    checkpoint_digest,
)
from runtime.reconcile import Request
from tests.support.objects import (
    backend_service,
    ingress,
    ingress_backend,
    ingress_class,
    secret,
)
from tests.unit.controller.ingress.caches import SETTINGS, caches, loader

A = "alb.ingress.kubernetes.io/"
POOL = "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abcDEF123"
COGNITO = json.dumps({"userPoolARN": POOL, "userPoolClientID": "client1",
                      "userPoolDomain": "shop-auth"})
JWT = {"jwksEndpoint": "https://idp.example.com/jwks", "issuer": "https://idp.example.com"}
HTTPS = {A + "listen-ports": '[{"HTTPS": 443}]',
         A + "certificate-arn": "arn:aws:acm:us-west-2:123456789012:certificate/x"}
BOTH = {**HTTPS, A + "listen-ports": '[{"HTTP": 80}, {"HTTPS": 443}]'}


def cognito(**fields: Any) -> str:
    return json.dumps({"userPoolARN": POOL, "userPoolClientID": "client1",
                       "userPoolDomain": "shop-auth", **fields})


def jwt(**fields: Any) -> str:
    return json.dumps({**JWT, **fields})


def build(*objs: dict[str, object], request: Request | None = None) -> BuiltGroup:
    c = caches(ingress_class("alb"), backend_service("web"), *objs)
    return build_group(loader(c).load(request or Request("default", "s")), c, SETTINGS)


# ---- parsing -------------------------------------------------------------------------------

def test_cognito_with_upstreams_defaults_and_keys_in_any_case() -> None:
    raw = json.dumps({"USERPOOLARN": POOL, "userPoolClientId": "client1",
                      "userpooldomain": "shop-auth", "unknown": 1,
                      "AuthenticationRequestExtraParams": {"display": "page"}})
    auth = parse_auth(ingress("s", {A + "auth-type": "cognito", A + "auth-idp-cognito": raw}),
                      None)
    assert auth is not None
    assert auth.oidc is None
    assert auth.cognito is not None
    assert (auth.cognito.user_pool_arn, auth.cognito.user_pool_client_id,
            auth.cognito.user_pool_domain, auth.cognito.extra_params) == (
        POOL, "client1", "shop-auth", {"display": "page"})
    assert (auth.scope, auth.session_cookie, auth.session_timeout, auth.on_unauthenticated) == (
        "openid", "AWSELBAuthSessionCookie", 604800, "authenticate")


def test_cognito_settings_are_read_on_the_service_first() -> None:
    ing = ingress("s", {A + "auth-type": "cognito", A + "auth-idp-cognito": COGNITO,
                        A + "auth-scope": "openid", A + "auth-session-timeout": "60"})
    svc = backend_service("web", {"auth-idp-cognito": cognito(userPoolDomain="auth.example.com"),
                                  "auth-scope": "openid email"})
    auth = parse_auth(ing, svc)
    assert auth is not None
    assert auth.cognito is not None
    assert (auth.cognito.user_pool_domain, auth.scope, auth.session_timeout) == (
        "auth.example.com", "openid email", 60)


@pytest.mark.parametrize(("raw", "message"), [
    (None, "auth-idp-cognito is required when auth-type is cognito"),
    ("{", "is not valid JSON"),
    ("[]", "unexpected structure"),
    (cognito(userPoolARN="arn:aws:iam::123456789012:role/x"), "not a Cognito user pool ARN"),
    (cognito(userPoolARN=POOL + "\n"), "not a Cognito user pool ARN"),
    (cognito(userPoolClientID="a b"), "1 to 128 letters"),
    (cognito(userPoolClientID=""), "1 to 128 letters"),
    (cognito(userPoolDomain="https://shop-auth.auth.us-west-2.amazoncognito.com"),
     "a URL: set the domain prefix"),
    (cognito(userPoolDomain="shop auth"), "not a domain prefix or a domain name"),
    (cognito(userPoolDomain="a" * 64), "not a domain prefix or a domain name"),
    (cognito(userPoolDomain=None), "userPoolDomain: Field required"),
    (cognito(userPoolClientID=7), "userPoolClientID: Input should be a valid string"),
    (cognito(authenticationRequestExtraParams={str(i): "v" for i in range(11)}),
     "11 entries; AWS allows at most 10"),
])
def test_a_bad_cognito_configuration_is_one_clear_error(raw: str | None, message: str) -> None:
    notes = {A + "auth-type": "cognito"}
    if raw is not None:
        notes[A + "auth-idp-cognito"] = raw
    with pytest.raises(AnnotationError) as info:
        parse_auth(ingress("s", notes), None)
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith(f"annotation {A}auth-idp-cognito")


def test_both_identity_providers_are_parsed_as_upstream_does() -> None:
    """Upstream parses auth-idp-oidc and auth-idp-cognito whatever auth-type says."""
    oidc = json.dumps({"issuer": "https://i", "authorizationEndpoint": "https://i/a",
                       "tokenEndpoint": "https://i/t", "userInfoEndpoint": "https://i/u",
                       "secretName": "s"})
    with pytest.raises(AnnotationError, match="auth-idp-cognito"):
        parse_auth(ingress("s", {A + "auth-type": "oidc", A + "auth-idp-oidc": oidc,
                                 A + "auth-idp-cognito": "{"}), None)
    auth = parse_auth(ingress("s", {A + "auth-type": "oidc", A + "auth-idp-oidc": oidc,
                                    A + "auth-idp-cognito": COGNITO}), None)
    assert auth is not None
    assert (auth.oidc is not None, auth.cognito) == (True, None)
    # `none` asks for nothing: nothing else is read.
    assert parse_auth(ingress("s", {A + "auth-type": "none", A + "auth-idp-cognito": "{"}),
                      None) is None


def test_jwt_validation_parses_upstreams_example() -> None:
    raw = ('{"jwksEndpoint":"https://example-endpoint.com","issuer":"https://example-issuer.com",'
           '"additionalClaims":[{"name":"admin","format":"single-string","values":["true"]},'
           '{"name":"ver","format":"string-array","values":["6","19"]},{"name":"scope",'
           '"format":"space-separated-values","values":["read:api","write","email"]}]}')
    config = parse_ingress(ingress("s", {A + "jwt-validation": raw})).jwt_validation
    assert config is not None
    assert (config.jwks_endpoint, config.issuer) == ("https://example-endpoint.com",
                                                     "https://example-issuer.com")
    assert [(c.name, c.format, c.values) for c in config.additional_claims] == [
        ("admin", "single-string", ("true",)), ("ver", "string-array", ("6", "19")),
        ("scope", "space-separated-values", ("read:api", "write", "email"))]
    upper = parse_ingress(ingress("s", {A + "jwt-validation": json.dumps(
        {"JWKSENDPOINT": JWT["jwksEndpoint"], "Issuer": "x", "AdditionalClaims": [
            {"NAME": "a", "Format": "single-string", "VALUES": ["b"]}]})})).jwt_validation
    assert upper is not None
    assert (upper.jwks_endpoint, upper.issuer, upper.additional_claims[0].values) == (
        JWT["jwksEndpoint"], "x", ("b",))


def _claim(**fields: Any) -> dict[str, Any]:
    return {"name": "role", "format": "single-string", "values": ["admin"], **fields}


@pytest.mark.parametrize(("raw", "message"), [
    (json.dumps({"issuer": "x"}), "jwksEndpoint is a required field for jwt validation"),
    (json.dumps({"jwksEndpoint": JWT["jwksEndpoint"]}),
     "issuer is a required field for jwt validation"),
    (jwt(jwksEndpoint="http://idp.example.com/jwks"), "full https:// URL"),
    (jwt(jwksEndpoint="https:///jwks"), "full https:// URL"),
    (jwt(jwksEndpoint="https://idp.example.com:99999/jwks"), "full https:// URL"),
    (jwt(jwksEndpoint="https://user:pw@idp.example.com/jwks"), "full https:// URL"),
    (jwt(jwksEndpoint="https://idp.example.com/" + "a" * 240), "at most 256 characters"),
    (jwt(jwksEndpoint="https://idp.example.com/a b"), "full https:// URL"),
    (jwt(issuer="x" * 257), "issuer must be at most 256"),
    (jwt(additionalClaims=[_claim(format="")]),
     "format is a required field for additional claims for jwt validation"),
    (jwt(additionalClaims=[_claim(name="")]),
     "name is a required field for additional claims for jwt validation"),
    (jwt(additionalClaims=[_claim(values=[])]),
     "values must not be empty for additional claims for jwt validation"),
    (jwt(additionalClaims=[_claim(format="regex")]), "format must be single-string"),
    (jwt(additionalClaims=[_claim(name="exp")]), "always validated"),
    (jwt(additionalClaims=[_claim(values=[str(i) for i in range(11)])]), "at most 10"),
    (jwt(additionalClaims=[_claim(values=["x" * 257])]), "1 to 256 printable characters"),
    (jwt(additionalClaims=[_claim(format="space-separated-values", values=["a b"])]),
     "cannot contain spaces"),
    (jwt(additionalClaims=[_claim(name=f"c{i}") for i in range(11)]),
     "11 claims; AWS allows at most 10"),
    (jwt(additionalClaims=[_claim(), _claim()]), "'role' appears twice"),
    (jwt(additionalClaims={"name": "x"}), "unexpected structure"),
])
def test_a_bad_jwt_validation_is_one_clear_error(raw: str, message: str) -> None:
    with pytest.raises(AnnotationError) as info:
        parse_ingress(ingress("s", {A + "jwt-validation": raw}))
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith(f"annotation {A}jwt-validation")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["jwksEndpoint", "issuer", "additionalClaims", "name", "format",
                         "values", "userPoolARN", "userPoolClientID", "userPoolDomain",
                         "x"]), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(value=_json_values, key=st.sampled_from(["jwt-validation", "auth-idp-cognito"]))
def test_any_json_is_parsed_or_one_clear_error(value: Any, key: str) -> None:
    notes = {A + key: json.dumps(value), A + "auth-type": "cognito"}
    for parse in (lambda: parse_ingress(ingress("s", notes)),
                  lambda: parse_auth(ingress("s", notes), None)):
        text = ""
        try:
            parse()
        except AnnotationError as exc:
            text = str(exc)
        assert "\n" not in text


# ---- the stack -----------------------------------------------------------------------------

def test_cognito_goes_before_the_forward_on_https_rules_only() -> None:
    built = build(ingress("s", {**BOTH, A + "auth-type": "cognito",
                                A + "auth-idp-cognito": COGNITO,
                                A + "auth-on-unauthenticated-request": "deny"}))
    first, second = built.stack.listener_rules["443:1"].actions
    assert isinstance(first, AuthenticateCognitoAction)
    assert isinstance(second, ForwardAction)
    assert (first.user_pool_arn, first.user_pool_client_id, first.user_pool_domain,
            first.on_unauthenticated_request) == (POOL, "client1", "shop-auth", "deny")
    [plain] = built.stack.listener_rules["80:1"].actions
    assert isinstance(plain, ForwardAction)
    assert built.http_unauthenticated == {"default/s": (
        "Ingress default/s: authentication and JWT validation apply on HTTPS listeners only; "
        "HTTP port 80 forwards without them (set ssl-redirect)")}
    redirected = build(ingress("s", {**BOTH, A + "ssl-redirect": "443",
                                     A + "auth-type": "cognito",
                                     A + "auth-idp-cognito": COGNITO}))
    assert redirected.http_unauthenticated == {}


def test_jwt_validation_goes_before_the_forward_on_https_rules_only() -> None:
    raw = jwt(additionalClaims=[_claim(name="z"), _claim(name="a", values=["2", "1"])])
    built = build(ingress("s", {**BOTH, A + "jwt-validation": raw}))
    first, second = built.stack.listener_rules["443:1"].actions
    assert isinstance(first, JwtValidationAction)
    assert isinstance(second, ForwardAction)
    assert [(c.name, tuple(c.values)) for c in first.additional_claims] == [
        ("a", ("2", "1")), ("z", ("admin",))]
    [plain] = built.stack.listener_rules["80:1"].actions
    assert isinstance(plain, ForwardAction)
    assert list(built.http_unauthenticated) == ["default/s"]


def test_a_backend_service_does_not_carry_jwt_validation() -> None:
    """Upstream reads jwt-validation on the Ingress only."""
    c = caches(ingress_class("alb"),
               backend_service("web", {"jwt-validation": jwt()}), ingress("s", HTTPS))
    built = build_group(loader(c).load(Request("default", "s")), c, SETTINGS)
    [forward] = built.stack.listener_rules["443:1"].actions
    assert isinstance(forward, ForwardAction)


def test_authentication_and_jwt_validation_together_are_refused_on_https() -> None:
    notes = {A + "auth-type": "cognito", A + "auth-idp-cognito": COGNITO,
             A + "jwt-validation": jwt()}
    with pytest.raises(BuildError) as info:
        build(ingress("s", {**HTTPS, **notes}))
    assert str(info.value) == ("Ingress default/s: authentication and jwt validation can't "
                               "both be configured")
    # Upstream builds neither action on HTTP listeners, so nothing conflicts there.
    built = build(ingress("s", notes))
    [forward] = built.stack.listener_rules["80:1"].actions
    assert isinstance(forward, ForwardAction)


def test_the_default_backend_is_authenticated_on_https_as_upstream() -> None:
    built = build(ingress("s", {**BOTH, A + "ssl-redirect": "443", A + "auth-type": "cognito",
                                A + "auth-idp-cognito": COGNITO},
                          spec={"defaultBackend": ingress_backend("web")}))
    first, second = built.stack.listeners["443"].default_actions
    assert isinstance(first, AuthenticateCognitoAction)
    assert isinstance(second, ForwardAction)
    oidc = json.dumps({"issuer": "https://i", "authorizationEndpoint": "https://i/a",
                       "tokenEndpoint": "https://i/t", "userInfoEndpoint": "https://i/u",
                       "secretName": "s"})
    built = build(secret("s", {"clientID": "id", "clientSecret": "shh"}),
                  ingress("s", {**HTTPS, A + "auth-type": "oidc", A + "auth-idp-oidc": oidc},
                          spec={"defaultBackend": ingress_backend("web")}))
    assert isinstance(built.stack.listeners["443"].default_actions[0], AuthenticateOidcAction)
    built = build(ingress("s", {**HTTPS, A + "jwt-validation": jwt()},
                          spec={"defaultBackend": ingress_backend("web")}))
    assert isinstance(built.stack.listeners["443"].default_actions[0], JwtValidationAction)
    # Without a default backend, the 404 answer stays as it is.
    built = build(ingress("s", {**HTTPS, A + "jwt-validation": jwt()}))
    [fixed] = built.stack.listeners["443"].default_actions
    assert isinstance(fixed, FixedResponseAction)


def test_members_of_a_group_each_keep_their_own_authentication() -> None:
    """Upstream's auth is per backend (the Ingress and its Service), with no group merge."""
    group = {A + "group.name": "g", **HTTPS}
    built = build(ingress("a", {**group, A + "auth-type": "cognito",
                                A + "auth-idp-cognito": COGNITO}, host="a.example.com"),
                  ingress("b", {**group, A + "jwt-validation": jwt()}, host="b.example.com"),
                  ingress("c", group, host="c.example.com"), request=Request("", "g"))
    firsts = {next(c.values[0] for c in r.conditions if c.field == "host-header"):
              type(r.actions[0]) for r in built.stack.listener_rules.values()}
    assert firsts == {"a.example.com": AuthenticateCognitoAction,
                      "b.example.com": JwtValidationAction, "c.example.com": ForwardAction}


def test_every_setting_is_in_the_canonical_json_and_the_checkpoint() -> None:
    notes = {**HTTPS, A + "auth-type": "cognito", A + "auth-idp-cognito": COGNITO}
    built = build(ingress("s", notes))
    text = canonical_json(built.stack).decode()
    assert POOL in text
    assert "shop-auth" in text
    before = checkpoint_digest(built.stack)
    for key, value in (("auth-idp-cognito", cognito(userPoolClientID="client2")),
                       ("auth-scope", "openid email"), ("auth-session-cookie", "c"),
                       ("auth-session-timeout", "60"),
                       ("auth-on-unauthenticated-request", "allow")):
        changed = build(ingress("s", {**notes, A + key: value}))
        assert checkpoint_digest(changed.stack) != before, key
    one = build(ingress("s", {**HTTPS, A + "jwt-validation": jwt(additionalClaims=[
        _claim(name="a"), _claim(name="b")])}))
    other = build(ingress("s", {**HTTPS, A + "jwt-validation": jwt(additionalClaims=[
        _claim(name="b"), _claim(name="a")])}))
    assert checkpoint_digest(one.stack) == checkpoint_digest(other.stack)
    assert checkpoint_digest(build(ingress("s", {**HTTPS, A + "jwt-validation": jwt(
        issuer="https://other.example.com")})).stack) != checkpoint_digest(one.stack)


def test_the_api_form_compares_equal_to_what_aws_answers() -> None:
    cog = AuthenticateCognitoAction(user_pool_arn=POOL, user_pool_client_id="c",
                                    user_pool_domain="d")
    sent = api_action(cog, 1, str)
    # AWS leaves out what was not set and fills its defaults in; either way it is the same.
    config = {"UserPoolArn": POOL, "UserPoolClientId": "c", "UserPoolDomain": "d"}
    answered = {"Type": "authenticate-cognito", "Order": 1, "AuthenticateCognitoConfig": config}
    assert normal_action(sent) == normal_action(answered)
    changed = {**answered, "AuthenticateCognitoConfig": {**config, "Scope": "email"}}
    assert normal_action(sent) != normal_action(changed)
    check = JwtValidationAction(jwks_endpoint="https://j", issuer="i", additional_claims=[
        JwtClaim(format="string-array", name="b", values=["1", "2"]),
        JwtClaim(format="single-string", name="a", values=["x"])])
    sent = api_action(check, 1, str)
    assert sent["JwtValidationConfig"]["AdditionalClaims"][0]["Name"] == "a"
    reordered = {**sent, "JwtValidationConfig": {
        **sent["JwtValidationConfig"],
        "AdditionalClaims": list(reversed(sent["JwtValidationConfig"]["AdditionalClaims"]))}}
    assert normal_action(sent) == normal_action(reordered)
    plain = api_action(JwtValidationAction(jwks_endpoint="https://j", issuer="i"), 1, str)
    assert "AdditionalClaims" not in plain["JwtValidationConfig"]
    assert normal_action(plain) != normal_action(sent)


def test_oidc_keys_match_in_any_case_too() -> None:
    raw = json.dumps({"ISSUER": "https://i", "AuthorizationEndpoint": "https://i/a",
                      "tokenendpoint": "https://i/t", "UserInfoEndpoint": "https://i/u",
                      "SecretName": "s"})
    auth = parse_auth(ingress("s", {A + "auth-type": "oidc", A + "auth-idp-oidc": raw}), None)
    assert auth is not None
    assert auth.oidc is not None
    assert (auth.oidc.issuer, auth.oidc.secret_name) == ("https://i", "s")
