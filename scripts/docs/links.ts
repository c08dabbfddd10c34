/**
 * Checks the relative links of README.md and docs/**.md: each must name a file that exists, and a
 * `#anchor` into a Markdown file must be one of its headings (as GitHub slugs them) or an explicit
 * `<a id="…">`. Targets listed in scripts/docs/pending-links.txt (pages other branches add) may be
 * missing; once one exists, keeping it listed is reported so the list is emptied after the merge.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The Markdown files whose links are checked, relative to `root`. */
export function markdownFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f));
  return ['README.md', ...docs.sort()];
}

/** `text` without fenced code blocks and inline code, where brackets are not links. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors a Markdown page offers: GitHub's heading slugs (with -1, -2 for repeats) and `id="…"`. */
export function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const noCode = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of noCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/\bid="([^"]+)"/g)) out.add(m[1]);
  return out;
}

/** The pending targets (repository-relative paths) from scripts/docs/pending-links.txt. */
export function pendingTargets(root: string): string[] {
  const file = join(root, 'scripts', 'docs', 'pending-links.txt');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** Every broken link (and every pending target that exists now), as `file: problem` lines; [] when all is well. */
export function brokenLinks(root: string): string[] {
  const pending = new Set(pendingTargets(root));
  const problems: string[] = [];
  for (const p of pending) {
    if (existsSync(join(root, p))) problems.push(`scripts/docs/pending-links.txt: ${p} exists now; delete its line`);
  }
  for (const file of markdownFiles(root)) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split('#', 2);
      const abs = path ? resolve(root, dirname(file), decodeURIComponent(path)) : join(root, file);
      const rel = relative(root, abs);
      if (!existsSync(abs)) {
        if (!pending.has(rel)) problems.push(`${file}: ${target}: no such file (${rel})`);
        continue;
      }
      if (anchor && abs.endsWith('.md') && !anchorsOf(readFileSync(abs, 'utf8')).has(anchor)) {
        problems.push(`${file}: ${target}: ${rel} has no anchor #${anchor}`);
      }
    }
  }
  return problems;
}
