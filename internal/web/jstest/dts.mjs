// A small reader of waitroom.d.ts, enough to check the declarations against
// the script and real values without TypeScript: the members of the
// namespace (consts, functions, type aliases, interfaces with their
// members), and check(), which says where a value does not fit a declared
// type. It reads the subset of TypeScript the file uses: string literal
// unions, primitives, null, Promise<T>, named types, interfaces with
// extends, optional and readonly members, methods.

/** readDeclarations parses the text of a .d.ts with one declared namespace. */
export function readDeclarations(text) {
  const src = text.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/\/\/[^\n]*/g, " ");
  const ns = /declare\s+namespace\s+(\w+)\s*\{/.exec(src);
  if (!ns) throw new Error("no `declare namespace` in the declarations");
  const open = ns.index + ns[0].length - 1;
  const body = src.slice(open + 1, matching(src, open));
  const decl = {
    name: ns[1],
    consts: {},
    functions: {},
    types: {},
    interfaces: {},
    rest: src.slice(matching(src, open) + 1),
  };
  let i = 0;
  for (;;) {
    const m = /^\s*(const|function|type|interface)\s+(\w+)/.exec(body.slice(i));
    if (!m) {
      if (body.slice(i).trim() !== "") throw new Error("cannot read the namespace from: " + body.slice(i, i + 80));
      break;
    }
    const start = i + m[0].length;
    if (m[1] === "interface") {
      const brace = body.indexOf("{", start);
      const ext = /^\s*extends\s+([\w\s,]+)$/.exec(body.slice(start, brace));
      const end = matching(body, brace);
      decl.interfaces[m[2]] = {
        extends: ext ? ext[1].split(",").map((s) => s.trim()) : [],
        members: readMembers(body.slice(brace + 1, end)),
      };
      i = end + 1;
      continue;
    }
    const end = statementEnd(body, start);
    const rest = body.slice(start, end).trim();
    if (m[1] === "const") decl.consts[m[2]] = rest.replace(/^:\s*/, "");
    else if (m[1] === "type") decl.types[m[2]] = rest.replace(/^=\s*/, "");
    else decl.functions[m[2]] = readSignature(rest);
    i = end + 1;
  }
  return decl;
}

// matching returns the index of the bracket closing the one at open.
function matching(s, open) {
  let depth = 0;
  let inString = false;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (inString) {
      if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if ("({[<".includes(c)) depth++;
    else if (")}]>".includes(c) && !(c === ">" && s[i - 1] === "=")) {
      depth--;
      if (depth === 0) return i;
    }
  }
  throw new Error("unbalanced brackets from: " + s.slice(open, open + 80));
}

// statementEnd returns the index of the ";" ending the statement at from.
function statementEnd(s, from) {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (c === '"') i = s.indexOf('"', i + 1);
    else if ("({[<".includes(c)) depth++;
    else if (")}]>".includes(c) && !(c === ">" && s[i - 1] === "=")) depth--;
    else if (c === ";" && depth === 0) return i;
  }
  throw new Error("no ; after: " + s.slice(from, from + 80));
}

// readSignature reads "(a: A, b?: B): R".
function readSignature(text) {
  const close = matching(text, text.indexOf("("));
  const inner = text.slice(text.indexOf("(") + 1, close);
  const params = [];
  for (const p of splitTop(inner, ",")) {
    const m = /^(\w+)(\?)?\s*:\s*([\s\S]+)$/.exec(p.trim());
    if (!m) throw new Error("cannot read parameter " + p);
    params.push({ name: m[1], optional: !!m[2], type: m[3].trim() });
  }
  return { params, returns: text.slice(close + 1).replace(/^\s*:\s*/, "").trim() };
}

// readMembers reads an interface body.
function readMembers(body) {
  const members = {};
  for (const raw of splitTop(body, ";")) {
    const text = raw.trim();
    if (!text) continue;
    const m = /^(readonly\s+)?(\w+)(\?)?\s*([(:])/.exec(text);
    if (!m) throw new Error("cannot read interface member " + text);
    const member = { name: m[2], optional: !!m[3], readonly: !!m[1] };
    if (m[4] === "(") {
      member.kind = "method";
      Object.assign(member, readSignature(text.slice(m[0].length - 1)));
    } else {
      member.kind = "property";
      member.type = text.slice(m[0].length).trim();
    }
    members[member.name] = member;
  }
  return members;
}

// splitTop splits s at sep outside brackets and strings.
function splitTop(s, sep) {
  const out = [];
  let depth = 0;
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') i = s.indexOf('"', i + 1);
    else if ("({[<".includes(c)) depth++;
    else if (")}]>".includes(c) && !(c === ">" && s[i - 1] === "=")) depth--;
    else if (c === sep && depth === 0) {
      out.push(s.slice(last, i));
      last = i + 1;
    }
  }
  out.push(s.slice(last));
  return out.filter((p) => p.trim() !== "");
}

/** alternatives splits a type at its top-level "|". */
export function alternatives(type) {
  return splitTop(type, "|").map((t) => t.trim());
}

/**
 * literals returns the string literals a union type (or a named alias of
 * one, through other aliases) allows.
 */
export function literals(decl, type) {
  const out = [];
  for (const alt of alternatives(type)) {
    const lit = /^"([^"]*)"$/.exec(alt);
    if (lit) out.push(lit[1]);
    else if (decl.types[alt] !== undefined) out.push(...literals(decl, decl.types[alt]));
    else throw new Error(`${alt} in ${type} is not a string literal or an alias of some`);
  }
  return out;
}

/** members returns an interface's members with those it extends from the namespace. */
export function members(decl, name) {
  const it = decl.interfaces[name];
  if (!it) throw new Error("no interface " + name);
  let all = {};
  for (const base of it.extends) {
    if (decl.interfaces[base]) all = { ...all, ...members(decl, base) };
  }
  return { ...all, ...it.members };
}

const builtinTypes = new Set(["string", "number", "boolean", "null", "undefined", "void", "Error", "Promise"]);

/** typeNames returns the type names a type text refers to. */
export function typeNames(type) {
  const bare = type.replace(/"[^"]*"/g, " ");
  return [...bare.matchAll(/\b([A-Za-z_]\w*)\b/g)].map((m) => m[1]).filter((n) => n !== "this");
}

/** unknownTypes lists the names used in the namespace that it does not declare. */
export function unknownTypes(decl) {
  const known = (n) => builtinTypes.has(n) || decl.types[n] !== undefined || decl.interfaces[n] !== undefined;
  const used = [];
  const sig = (s) => {
    for (const p of s.params) used.push(...typeNames(p.type));
    used.push(...typeNames(s.returns));
  };
  for (const t of Object.values(decl.consts)) used.push(...typeNames(t));
  for (const f of Object.values(decl.functions)) sig(f);
  for (const t of Object.values(decl.types)) used.push(...typeNames(t));
  for (const it of Object.values(decl.interfaces)) {
    used.push(...it.extends);
    for (const m of Object.values(it.members)) {
      if (m.kind === "method") sig(m);
      else used.push(...typeNames(m.type));
    }
  }
  return [...new Set(used.filter((n) => !known(n)))];
}

/**
 * check returns the ways value does not fit type (a type text of the
 * namespace), each naming where: [] when it fits. Objects of an interface
 * must have its required members, may have its optional ones, and nothing
 * else; a member's value fits its type. A Promise fits any thenable.
 */
export function check(decl, value, type, where = "value") {
  const alts = alternatives(type);
  let best = null;
  for (const alt of alts) {
    const problems = checkOne(decl, value, alt, where);
    if (problems.length === 0) return [];
    if (!best || problems.length < best.length) best = problems;
  }
  if (alts.length > 1 && best.length > 0 && typeof value !== "object") {
    return [`${where}: ${JSON.stringify(value)} is none of ${type}`];
  }
  return best;
}

function checkOne(decl, value, type, where) {
  const lit = /^"([^"]*)"$/.exec(type);
  if (lit) return value === lit[1] ? [] : [`${where}: ${JSON.stringify(value)}, want "${lit[1]}"`];
  switch (type) {
    case "string":
    case "number":
    case "boolean":
      return typeof value === type ? [] : [`${where}: ${JSON.stringify(value)} is not a ${type}`];
    case "null":
      return value === null ? [] : [`${where}: ${JSON.stringify(value)} is not null`];
    case "undefined":
    case "void":
      return value === undefined ? [] : [`${where}: ${JSON.stringify(value)} is not undefined`];
    case "Error":
      return value instanceof Error || (value && typeof value.message === "string" && typeof value.name === "string")
        ? []
        : [`${where}: not an Error`];
  }
  if (/^Promise</.test(type)) {
    return value && typeof value.then === "function" ? [] : [`${where}: not a Promise`];
  }
  if (decl.types[type] !== undefined) return check(decl, value, decl.types[type], where);
  if (decl.interfaces[type]) {
    if (value === null || typeof value !== "object") return [`${where}: ${JSON.stringify(value)} is not a ${type}`];
    const ms = members(decl, type);
    const extendsError = decl.interfaces[type].extends.includes("Error");
    const problems = [];
    if (extendsError && typeof value.message !== "string") problems.push(`${where}: an Error without a message`);
    for (const m of Object.values(ms)) {
      const has = m.name in value && value[m.name] !== undefined;
      if (!has) {
        if (!m.optional) problems.push(`${where}: ${type} lacks ${m.name}`);
        continue;
      }
      if (m.kind === "method") {
        if (typeof value[m.name] !== "function") problems.push(`${where}.${m.name}: not a function`);
      } else {
        problems.push(...check(decl, value[m.name], m.type, `${where}.${m.name}`));
      }
    }
    for (const k of Object.keys(value)) {
      if (k.startsWith("_") && !ms[k]) continue; // the script's own state
      if (!ms[k] && !(extendsError && (k === "message" || k === "stack"))) {
        problems.push(`${where}: ${k} (${JSON.stringify(value[k])}) is not declared in ${type}`);
      }
    }
    return problems;
  }
  return [`${where}: the type ${type} is not one the reader knows`];
}
