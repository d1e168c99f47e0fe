// Request members with the rules openapi.json states for them (docs/accounts.md#field-rules,
// docs/notes.md#shape, docs/http.md#lengths):
// lengths in code points, as JSON Schema counts them. Each rule is the domain's to check, with its
// own code (too long a content is TOO_MANY_CONTENT, an unknown visibility INVALID_VISIBILITY), so
// here the rule is only documented (`meta`): a zod check (`.max()`, `.regex()`, `z.enum`) would
// refuse first, as INVALID_REQUEST, and would count UTF-16 units rather than code points.
import { z } from "zod";

import { LIMITS as ACCOUNT } from "../domain/accounts/rules.ts";
import { MAX_FILE_NAME } from "../domain/drive/service.ts";
import { MAX_TARGETS, MAX_TITLE } from "../domain/lists/service.ts";
import { LIMITS as NOTE } from "../domain/notes/service.ts";

type Rule = {
  description: string;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  enum?: readonly string[];
  default?: string;
};

/** A text member whose rule the domain checks. */
const text = (rule: Rule) => z.string().meta(rule);

const SNOWFLAKE = "^[0-9]{1,20}$";

/**
 * A snowflake id (docs/http.md#ids); one of another form is the code of an unknown one
 * (`NOTE_NOT_FOUND`, ...).
 */
export const id = (of: string) => text({ description: `${of} (a snowflake id)`, pattern: SNOWFLAKE });

/** A path segment naming an account (docs/http.md#account-paths). */
export const accountRef = text({
  description: "an account: its id, or its name, plain (`alice`) or qualified (`@alice@host`)",
  minLength: 1,
  maxLength: ACCOUNT.qualifiedNameMax,
});

export const accountName = text({
  description:
    "1 to 64 of A-Z a-z 0-9 - . _, first and last a letter or digit, not digits only (a path segment of " +
    "digits is an account id): INVALID_ACCOUNT_NAME, or TOO_LONG_ACCOUNT_NAME past 64",
  minLength: 1,
  maxLength: ACCOUNT.name,
  pattern: "^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$",
});

export const email = text({
  description: `an e-mail address, ${ACCOUNT.emailMin} to ${ACCOUNT.emailMax} characters: INVALID_EMAIL`,
  format: "email",
  minLength: ACCOUNT.emailMin,
  maxLength: ACCOUNT.emailMax,
});

export const passphrase = text({
  description:
    `${ACCOUNT.passphraseMin} to ${ACCOUNT.passphraseMax} characters, no white space (space, tab, full-width ` +
    "space, line breaks) or control character: VULNERABLE_PASSPHRASE",
  minLength: ACCOUNT.passphraseMin,
  maxLength: ACCOUNT.passphraseMax,
});

export const captchaToken = text({
  description:
    "the captcha provider's token; with the `dev` provider any non-empty text passes except `fail` (YOU_ARE_BOT)",
  minLength: 1,
});

export const nickname = text({
  description:
    `${ACCOUNT.nicknameMin} to ${ACCOUNT.nicknameMax} characters that show something, on one line, no control ` +
    "character: INVALID_SEQUENCE, INVALID_REQUEST when blank",
  minLength: ACCOUNT.nicknameMin,
  maxLength: ACCOUNT.nicknameMax,
});

export const bio = text({
  description: `0 to ${ACCOUNT.bioMax} characters, line breaks allowed, no other control character: INVALID_SEQUENCE`,
  maxLength: ACCOUNT.bioMax,
});

export const ownImage = (what: string) =>
  text({
    description: `one of the caller's image files (a drive file id) as its ${what}; "" removes it`,
    pattern: "^[0-9]{0,20}$",
  });

export const VISIBILITIES = ["public", "home", "followers", "direct"] as const;

export const visibility = text({
  description:
    "who sees the note (see docs/notes.md#visibility): `public` and `home` anyone (`home` stays off the global timeline), " +
    "`followers` the accepted followers, `direct` the `send_to` account; another value: INVALID_VISIBILITY",
  enum: VISIBILITIES,
  default: "public",
});

export const content = text({
  description: `1 to ${NOTE.content} characters, empty only with attachments: TOO_MANY_CONTENT past it (TOO_MANY_CHAR_LENGTH on renote and reply)`,
  maxLength: NOTE.content,
});

export const cwComment = text({
  description: `the content warning, 0 to ${NOTE.cwComment} characters (default empty)`,
  maxLength: NOTE.cwComment,
});

export const attachmentFileIds = z.array(id("one of the caller's drive files")).meta({
  description: `0 to ${NOTE.attachments} of the caller's drive files: TOO_MANY_ATTACHMENTS`,
  maxItems: NOTE.attachments,
});

export const sendTo = text({
  description: "the addressee of a `direct` note: an account id or name (only with `direct`, else INVALID_REQUEST)",
});

export const emoji = text({
  description: "exactly one Unicode emoji (ZWJ sequences, flags, skin tones, keycaps count as one) or `<:alias:id>`",
  minLength: 1,
});

export const listTitle = text({
  description: `1 to ${MAX_TITLE} characters that show something: TITLE_TOO_LONG past it`,
  minLength: 1,
  maxLength: MAX_TITLE,
});

export const listTargets = z.array(id("an account")).meta({
  description: `1 to ${MAX_TARGETS} account ids, all or none: TOO_MANY_TARGETS past it`,
  maxItems: MAX_TARGETS,
});

export const fileName = text({
  description: `1 to ${MAX_FILE_NAME} characters; default: the file part's own name (FILE_NAME_TOO_LONG past it)`,
  minLength: 1,
  maxLength: MAX_FILE_NAME,
});

export const TIMELINE_TYPES = ["home", "global"] as const;

export const timelineType = text({
  description: "`home` (the caller's and followed accounts' notes; credentials needed) or `global` (public notes)",
  enum: TIMELINE_TYPES,
});
