import { createRemoteJWKSet, customFetch as joseCustomFetch, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type * as client from "openid-client";
import { claimTextProblem } from "./claims.ts";
import type { Config } from "../config/parse.ts";
import { AppError } from "../http/errors.ts";
import { reasonFromError } from "../probes/reason.ts";
import { memoPerKey } from "../lifecycle/memo.ts";
import { type OpenIdClient, loadOpenIdClient } from "./sdk.ts";

/** What a login keeps between /api/auth/login and the callback (in a signed, short-lived cookie). */
export interface LoginTransaction {
  state: string;
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
  /** Same-site path to land on after the callback. */
  returnTo: string;
}

/**
 * The user an identity provider vouched for in a verified ID token: subject, name, email and the groups of
 * OIDC_GROUPS_CLAIM. The session the sign-in then issues is lib/auth's concern (SessionUser has this shape).
 */
export interface VerifiedUser {
  sub: string;
  name?: string;
  email?: string;
  groups: string[];
}

/** The OIDC relying party: starts an authorization-code + PKCE login and completes its callback. */
export interface OidcLogin {
  begin(opts: { redirectUri: string; returnTo?: string }): Promise<{ authorizationUrl: URL; transaction: LoginTransaction }>;
  /** Exchanges the code and verifies the ID token; returns the user or throws an AppError. */
  complete(callbackUrl: URL, transaction: LoginTransaction): Promise<VerifiedUser>;
}

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  scope: string;
  /** Expected ID token audience; the client id when unset. */
  audience?: string;
  /** ID token keys; the discovery document's jwks_uri when unset. */
  jwksUrl?: string;
  groupsClaim: string;
  /** Allow http:// endpoints (development identity provider only; never in production). */
  allowInsecureHttp?: boolean;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  /** Timeout of each request to the identity provider. */
  timeoutSeconds?: number;
}

/** Settings from validated config, or null when login is not configured (no issuer or client id). */
export function oidcSettingsFromConfig(
  config: Pick<
    Config,
    | "OIDC_ISSUER"
    | "OIDC_CLIENT_ID"
    | "OIDC_CLIENT_SECRET"
    | "OIDC_SCOPE"
    | "OIDC_AUDIENCE"
    | "OIDC_JWKS_URL"
    | "OIDC_GROUPS_CLAIM"
    | "isProduction"
  >,
  opts: { fetch?: typeof globalThis.fetch; now?: () => number } = {},
): OidcSettings | null {
  if (!config.OIDC_ISSUER || !config.OIDC_CLIENT_ID) return null;
  return {
    issuer: config.OIDC_ISSUER,
    clientId: config.OIDC_CLIENT_ID,
    // Read on every sign-in: a secret re-read from Secrets Manager (APP_SECRETS_AWS) lands in the config
    // object, and the next sign-in uses it without a restart.
    get clientSecret() {
      return config.OIDC_CLIENT_SECRET;
    },
    scope: config.OIDC_SCOPE,
    audience: config.OIDC_AUDIENCE,
    jwksUrl: config.OIDC_JWKS_URL,
    groupsClaim: config.OIDC_GROUPS_CLAIM,
    allowInsecureHttp: !config.isProduction,
    fetch: opts.fetch,
    now: opts.now,
  };
}

/** The relying party from validated config, or null when sign-in is not configured. */
export function oidcLoginFromConfig(
  config: Parameters<typeof oidcSettingsFromConfig>[0],
  opts: { fetch?: typeof globalThis.fetch; now?: () => number } = {},
): OidcLogin | null {
  const settings = oidcSettingsFromConfig(config, opts);
  return settings ? createOidcLogin(settings) : null;
}

const MAX_GROUPS = 256;
const MAX_CLAIM = 512;
/** Asymmetric algorithms only: an ID token MACed with the client secret is not accepted. */
const ID_TOKEN_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/**
 * The relying party. Discovery is fetched on first use and cached in the process; a failed
 * discovery is not cached, so the next login retries it. Session checks never come here.
 */
export function createOidcLogin(settings: OidcSettings): OidcLogin {
  const now = settings.now ?? Date.now;
  const fetchFn = settings.fetch ?? globalThis.fetch;
  const timeoutSeconds = settings.timeoutSeconds ?? 10;
  const issuerUrl = new URL(settings.issuer);
  const insecure = issuerUrl.protocol === "http:";
  if (insecure && !settings.allowInsecureHttp) throw new Error("OIDC_ISSUER must use https in production");

  let jwks: { url: string; keys: ReturnType<typeof createRemoteJWKSet> } | undefined;

  // The client secret is read on every sign-in; a rotated one (settings.clientSecret may be a getter on the live
  // config) builds the client again, with one more discovery request. A failed discovery is not kept: the next
  // login retries, and fetches the (possibly rotated) keys afresh.
  const configuration = memoPerKey(
    () => settings.clientSecret,
    (secret) =>
      loadOpenIdClient()
        .then((oc) =>
          oc.discovery(
            issuerUrl,
            settings.clientId,
            secret ? { client_secret: secret } : undefined,
            secret ? oc.ClientSecretBasic(secret) : oc.None(),
            {
              execute: insecure ? [oc.allowInsecureRequests] : [],
              [oc.customFetch]: (url, options) => fetchFn(url, options as RequestInit),
              timeout: timeoutSeconds,
            },
          ),
        )
        .catch((err: unknown) => {
          jwks = undefined;
          throw unavailable(err);
        }),
  );

  function keysFor(config: client.Configuration) {
    const url = settings.jwksUrl ?? config.serverMetadata().jwks_uri;
    if (!url) throw new AppError("identity_provider_unavailable", "The identity provider publishes no signing keys (jwks_uri).");
    if (jwks?.url !== url) {
      jwks = {
        url,
        keys: createRemoteJWKSet(new URL(url), {
          timeoutDuration: timeoutSeconds * 1000,
          [joseCustomFetch]: (u: string, o: RequestInit) => fetchFn(u, o),
        }),
      };
    }
    return jwks.keys;
  }

  async function begin(opts: { redirectUri: string; returnTo?: string }) {
    const config = await configuration();
    const oc = await loadOpenIdClient();
    const codeVerifier = oc.randomPKCECodeVerifier();
    const transaction: LoginTransaction = {
      state: oc.randomState(),
      nonce: oc.randomNonce(),
      codeVerifier,
      redirectUri: opts.redirectUri,
      returnTo: safeReturnTo(opts.returnTo),
    };
    const authorizationUrl = oc.buildAuthorizationUrl(config, {
      redirect_uri: transaction.redirectUri,
      scope: settings.scope,
      response_type: "code",
      state: transaction.state,
      nonce: transaction.nonce,
      code_challenge: await oc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
    });
    return { authorizationUrl, transaction };
  }

  async function complete(callbackUrl: URL, tx: LoginTransaction): Promise<VerifiedUser> {
    const config = await configuration();
    const oc = await loadOpenIdClient();
    // The token request's redirect_uri must be the one we sent, whatever Host a proxy passed on.
    const current = new URL(tx.redirectUri);
    current.search = callbackUrl.search;
    // Our own state check first, so every later failure is about the provider's answer itself.
    const state = callbackUrl.searchParams.get("state");
    if (state !== tx.state) {
      throw new AppError(
        "bad_request",
        "Sign-in failed: the callback does not belong to this sign-in (state mismatch). Start again from the sign-in page.",
      );
    }
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await oc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: tx.codeVerifier,
        expectedState: tx.state,
        expectedNonce: tx.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw callbackError(oc, err);
    }
    const idToken = tokens.id_token;
    if (!idToken) throw loginFailed("the identity provider returned no ID token");

    // openid-client checked the claims; the signature is ours to check, with the configured or discovered keys.
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(idToken, keysFor(config), {
        issuer: config.serverMetadata().issuer,
        audience: settings.audience ?? settings.clientId,
        algorithms: ID_TOKEN_ALGS,
        currentDate: new Date(now()),
        requiredClaims: ["sub", "exp", "iat"],
      }));
    } catch (err) {
      if (isUnavailable(oc, err)) throw unavailable(err);
      throw loginFailed(`the ID token did not verify (${err instanceof joseErrors.JOSEError ? err.code : "invalid"})`);
    }
    if (claims.nonce !== tx.nonce) throw loginFailed("the ID token nonce does not match this sign-in");

    let groupsValue = claimAt(claims, settings.groupsClaim);
    if (groupsValue === undefined && config.serverMetadata().userinfo_endpoint) {
      // Some providers put groups only in userinfo.
      try {
        const info = await oc.fetchUserInfo(config, tokens.access_token, claims.sub!);
        groupsValue = claimAt(info, settings.groupsClaim);
      } catch (err) {
        if (isUnavailable(oc, err)) throw unavailable(err);
      }
    }
    // Text a session could not carry through the config store (a NUL) or that is not text (ill-formed Unicode) is
    // refused here, by the claim's name, before any session exists.
    refuseBadClaimText("sub", claims.sub);
    refuseBadClaimText("name", claims.name);
    refuseBadClaimText("preferred_username", claims.preferred_username);
    refuseBadClaimText("email", claims.email);
    refuseBadClaimText("groups", groupsValue);
    return {
      sub: claims.sub!,
      name: stringClaim(claims.name) ?? stringClaim(claims.preferred_username),
      email: stringClaim(claims.email),
      groups: groupsFrom(groupsValue),
    };
  }

  return { begin, complete };
}

/** A claim by name, or by dotted path (`realm_access.roles`) when no claim has the literal name. */
function claimAt(claims: Record<string, unknown>, name: string): unknown {
  if (name in claims) return claims[name];
  let v: unknown = claims;
  for (const part of name.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function groupsFrom(v: unknown): string[] {
  const list = typeof v === "string" ? v.split(/[\s,]+/) : Array.isArray(v) ? v : [];
  const groups = list.filter((g): g is string => typeof g === "string" && g.length > 0 && g.length <= MAX_CLAIM);
  return [...new Set(groups)].slice(0, MAX_GROUPS);
}

/**
 * Throws a 401 naming `claim` (never its value) when its text, or any text in it (a list of groups), has a NUL or is
 * ill-formed Unicode (claims.ts, the rule the session check applies to every request).
 */
function refuseBadClaimText(claim: string, v: unknown): void {
  const texts = typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
  for (const text of texts) {
    const problem = claimTextProblem(text);
    if (problem === null) continue;
    throw new AppError(
      "unauthenticated",
      `Sign-in failed: the identity provider's ${claim} claim contains ${problem}, which this service does not accept. Ask the identity provider's administrator to correct the account.`,
      { reason: "invalid_claim", claim },
    );
  }
}

function stringClaim(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 && v.length <= MAX_CLAIM ? v : undefined;
}

const MAX_RETURN_TO = 2000;

/**
 * Only same-site absolute paths; `//host` and `/\host` would leave the site. The result goes into a
 * `Location` header, so it is printable ASCII: a path with control characters (C0, DEL, C1) or an
 * unpaired surrogate becomes `/`, and every other character outside printable ASCII is percent-encoded
 * as UTF-8 (`/café` → `/caf%C3%A9`), which the browser decodes back.
 */
export function safeReturnTo(v: string | undefined): string {
  if (!v?.startsWith("/") || v.startsWith("//") || v.startsWith("/\\") || v.length > MAX_RETURN_TO) return "/";
  if (/[\u0000-\u001f\u007f-\u009f]/.test(v)) return "/";
  let out = "";
  for (const ch of v) {
    if (ch >= "\u0021" && ch <= "\u007e") {
      out += ch;
      continue;
    }
    // A lone surrogate has no UTF-8 encoding (encodeURIComponent would throw URIError).
    if (ch.length === 1 && ch >= "\ud800" && ch <= "\udfff") return "/";
    out += encodeURIComponent(ch);
  }
  return out.length > MAX_RETURN_TO ? "/" : out;
}

function isUnavailable(oc: OpenIdClient, err: unknown): boolean {
  if (err instanceof TypeError && (err as { cause?: unknown }).cause) return true; // fetch failed: refused, reset, DNS
  const name = (err as { name?: unknown } | null)?.name;
  if (name === "TimeoutError" || name === "AbortError") return true;
  if (err instanceof joseErrors.JWKSTimeout) return true;
  if (err instanceof oc.ClientError && err.code === "OAUTH_RESPONSE_IS_NOT_CONFORM") {
    const status = (err.cause as { status?: number } | undefined)?.status;
    return status === undefined || status >= 500;
  }
  return false;
}

function unavailable(err: unknown): AppError {
  const reason = reasonFromError(err);
  return new AppError(
    "identity_provider_unavailable",
    "The identity provider is unreachable, so sign-in is unavailable right now. Existing sessions keep working; try again shortly.",
    { reason },
  );
}

function loginFailed(why: string): AppError {
  return new AppError("unauthenticated", `Sign-in failed: ${why}. Start again from the sign-in page.`);
}

/** Maps callback failures to safe messages: codes from the protocol, never provider text or internals. */
function callbackError(oc: OpenIdClient, err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isUnavailable(oc, err)) return unavailable(err);
  if (err instanceof oc.AuthorizationResponseError) {
    const code = /^[a-z_]{1,40}$/.test(err.error) ? err.error : "error";
    return loginFailed(`the identity provider refused the sign-in (${code})`);
  }
  if (err instanceof oc.ResponseBodyError) {
    const code = /^[a-z_]{1,40}$/.test(err.error) ? err.error : "error";
    return loginFailed(`the code exchange was refused (${code})`);
  }
  if (err instanceof oc.ClientError) {
    // After our state check, these are defects of the token response or ID token (issuer, audience, nonce, expiry).
    const code = /^[A-Z_]{1,60}$/.test(err.code ?? "") ? err.code : "OAUTH_ERROR";
    return loginFailed(`the identity provider's answer did not verify (${code})`);
  }
  return loginFailed("the callback could not be processed");
}
