// The search language (docs/search.md#grammar), pure: parse a query into a tree, print a tree back.
//   query   := or
//   or      := and ("OR" and)*
//   and     := unary (" " unary)*
//   unary   := "-"? primary
//   primary := "(" or ")" | "\"" phrase "\"" | from:NAME | is:(renote|quote) | has:(link|media) | keyword
// Every malformed query is INVALID_QUERY.
import { DomainError } from "../errors.ts";

export type SearchNode =
  | { kind: "or"; items: SearchNode[] }
  | { kind: "and"; items: SearchNode[] }
  | { kind: "not"; item: SearchNode }
  | { kind: "keyword"; text: string }
  | { kind: "phrase"; text: string }
  | { kind: "from"; name: string }
  | { kind: "is"; value: "renote" | "quote" }
  | { kind: "has"; value: "link" | "media" };

export const MAX_QUERY_LENGTH = 512;

type Token =
  | { type: "open" }
  | { type: "close" }
  | { type: "or" }
  | { type: "not" }
  | { type: "phrase"; text: string }
  | { type: "word"; text: string };

/** INVALID_QUERY, saying what is wrong (sent as `detail`: README, Errors). */
const invalid = (detail: string) => new DomainError("INVALID_QUERY", { detail });

const OPERATOR = /^([A-Za-z]+):(.*)$/s;
// `scheme://` is a URL to look for, not an operator.
const URL_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const isSpace = (c: string) => /\s/u.test(c);
  while (i < query.length) {
    const c = query[i];
    if (isSpace(c)) {
      i += 1;
    } else if (c === "(") {
      tokens.push({ type: "open" });
      i += 1;
    } else if (c === ")") {
      tokens.push({ type: "close" });
      i += 1;
    } else if (c === '"') {
      const end = query.indexOf('"', i + 1);
      if (end === -1) throw invalid("a quote is not closed");
      tokens.push({ type: "phrase", text: query.slice(i + 1, end) });
      i = end + 1;
    } else if (c === "-") {
      // A leading dash negates what follows it at once; alone it acts on nothing.
      const next = query[i + 1];
      if (next === undefined || isSpace(next) || next === ")")
        throw invalid("`-` with nothing right after it to negate");
      tokens.push({ type: "not" });
      i += 1;
    } else {
      let end = i;
      while (end < query.length && !isSpace(query[end]) && !'()"'.includes(query[end])) end += 1;
      const text = query.slice(i, end);
      tokens.push(text === "OR" ? { type: "or" } : { type: "word", text });
      i = end;
    }
  }
  return tokens;
}

function wordNode(text: string): SearchNode {
  const operator = OPERATOR.exec(text);
  if (!operator || URL_LIKE.test(text)) return { kind: "keyword", text };
  const name = operator[1].toLowerCase();
  const value = operator[2];
  if (name === "from") {
    if (!/^@?[A-Za-z0-9._-]+(@[A-Za-z0-9.:-]+)?$/.test(value)) throw invalid("from: takes an account name");
    return { kind: "from", name: value };
  }
  const lower = value.toLowerCase();
  if (name === "is" && (lower === "renote" || lower === "quote")) return { kind: "is", value: lower };
  if (name === "has" && (lower === "link" || lower === "media")) return { kind: "has", value: lower };
  throw invalid(`unknown operator or value \`${name}:\` (from:, is:renote|quote, has:link|media)`);
}

class Parser {
  private at = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token | undefined {
    return this.tokens[this.at];
  }

  parseQuery(): SearchNode {
    if (this.tokens.length === 0) throw invalid("the query is empty");
    const tree = this.parseOr();
    if (this.at !== this.tokens.length) throw invalid("a `)` closes nothing");
    return tree;
  }

  private parseOr(): SearchNode {
    const items = [this.parseAnd()];
    while (this.peek()?.type === "or") {
      this.at += 1;
      items.push(this.parseAnd());
    }
    return items.length === 1 ? items[0] : { kind: "or", items };
  }

  private parseAnd(): SearchNode {
    const items = [this.parseUnary()];
    for (let next = this.peek(); next && next.type !== "or" && next.type !== "close"; next = this.peek()) {
      items.push(this.parseUnary());
    }
    return items.length === 1 ? items[0] : { kind: "and", items };
  }

  private parseUnary(): SearchNode {
    if (this.peek()?.type === "not") {
      this.at += 1;
      return { kind: "not", item: this.parsePrimary() };
    }
    return this.parsePrimary();
  }

  private parsePrimary(): SearchNode {
    const token = this.peek();
    this.at += 1;
    switch (token?.type) {
      case "open": {
        const inner = this.parseOr();
        if (this.peek()?.type !== "close") throw invalid("a `(` is not closed");
        this.at += 1;
        return inner;
      }
      case "phrase":
        if (token.text.trim() === "") throw invalid("an empty phrase");
        return { kind: "phrase", text: token.text };
      case "word":
        return wordNode(token.text);
      default:
        // End of input, ")", "OR" or a second "-": nothing to act on.
        throw invalid("`OR`, `-` or `(` with nothing to act on");
    }
  }
}

/** Whether some keyword, phrase or from: stands outside every negation. */
function hasPositiveTerm(node: SearchNode, negated = false): boolean {
  switch (node.kind) {
    case "or":
    case "and":
      return node.items.some((item) => hasPositiveTerm(item, negated));
    case "not":
      return hasPositiveTerm(node.item, !negated);
    case "keyword":
    case "phrase":
    case "from":
      return !negated;
    default:
      return false;
  }
}

export function parseSearchQuery(query: string): SearchNode {
  if ([...query].length > MAX_QUERY_LENGTH) throw invalid(`over ${MAX_QUERY_LENGTH} characters`);
  const tree = new Parser(tokenize(query)).parseQuery();
  if (!hasPositiveTerm(tree)) throw invalid("no keyword, phrase or from: outside a negation");
  return tree;
}

/** The query text of a tree; parsing it gives the same tree back. */
export function printSearchQuery(node: SearchNode): string {
  const grouped = (child: SearchNode, parent: "or" | "and" | "not") => {
    const text = printSearchQuery(child);
    const needsGroup =
      (parent === "not" && (child.kind === "or" || child.kind === "and")) ||
      (parent === "and" && (child.kind === "or" || child.kind === "and")) ||
      (parent === "or" && child.kind === "or");
    return needsGroup ? `(${text})` : text;
  };
  switch (node.kind) {
    case "or":
      return node.items.map((item) => grouped(item, "or")).join(" OR ");
    case "and":
      return node.items.map((item) => grouped(item, "and")).join(" ");
    case "not":
      return `-${grouped(node.item, "not")}`;
    case "keyword":
      return node.text;
    case "phrase":
      return `"${node.text}"`;
    case "from":
      return `from:${node.name}`;
    case "is":
      return `is:${node.value}`;
    case "has":
      return `has:${node.value}`;
  }
}

/**
 * The keywords and phrases of two characters or more every match must contain (the positive
 * terms of a top-level AND), or undefined when the tree gives none: what an index can narrow a
 * search by, each term being a case-insensitive substring of every match.
 */
export function requiredTerms(tree: SearchNode): string[] | undefined {
  const items = tree.kind === "and" ? tree.items : [tree];
  const terms = items.flatMap((item) =>
    (item.kind === "keyword" || item.kind === "phrase") && [...item.text].length >= 2 ? [item.text] : [],
  );
  return terms.length ? terms : undefined;
}
