// Human verification (docs/running.md#captcha): the `dev` provider, or a provider's siteverify over
// HTTPS.
import type { Config } from "./config.ts";

export interface CaptchaVerifier {
  /** True when the token proves a human; throws when the provider cannot be reached. */
  verify(token: string, remoteIp?: string): Promise<boolean>;
}

const SITEVERIFY: Record<string, string> = {
  turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
  hcaptcha: "https://api.hcaptcha.com/siteverify",
  recaptcha: "https://www.google.com/recaptcha/api/siteverify",
};

export class CaptchaUnavailableError extends Error {}

export function createCaptchaVerifier(config: Config["captcha"]): CaptchaVerifier {
  if (config.provider === "dev") {
    // Any non-empty token passes except the literal `fail`.
    return { verify: async (token) => token.length > 0 && token !== "fail" };
  }
  const endpoint = config.verifyUrl ?? SITEVERIFY[config.provider];
  const secret = config.secret ?? "";
  return {
    async verify(token, remoteIp) {
      if (!token) return false;
      const form = new URLSearchParams({ secret, response: token });
      if (remoteIp) form.set("remoteip", remoteIp);
      let response: Response;
      try {
        response = await fetch(endpoint, { method: "POST", body: form, signal: AbortSignal.timeout(10_000) });
      } catch (err) {
        throw new CaptchaUnavailableError(`captcha provider unreachable: ${(err as Error).message}`);
      }
      if (!response.ok) throw new CaptchaUnavailableError(`captcha provider answered ${response.status}`);
      const result = (await response.json().catch(() => ({}))) as { success?: unknown };
      return result.success === true;
    },
  };
}
