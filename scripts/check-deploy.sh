#!/usr/bin/env bash
# Checks the systemd units in deploy/ (issue 24 item 4) against the package as it installs: packs the
# tarball (`npm pack`, whose prepack runs `npm run build`: dist/ and the client's type declarations,
# checked to be in it), installs it with `npm install -g --prefix` into a
# temporary /usr/local, checks that every ExecStart runs the CLI that install provides
# (/usr/local/bin/berth, docs/deploy.md), then runs `systemd-analyze verify` on the units with that
# path pointed at the temporary install. Any message from verify fails the check. Installs the
# Debian package systemd (which provides systemd-analyze) when it is missing; removes what it made.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v systemd-analyze >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/berth-deploy-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tarball=$(npm pack --silent --pack-destination "$tmp" | tail -n 1)
listing=$(tar -tzf "$tmp/$tarball")
for f in dist/main.js dist/client.js dist/types/src/client/index.d.ts; do
  if ! grep -qx "package/$f" <<<"$listing"; then
    echo "check-deploy: $tarball lacks $f (prepack: npm run build)" >&2
    exit 1
  fi
done
npm install -g --silent --prefix "$tmp/usr/local" --prefer-offline --no-audit --no-fund "$tmp/$tarball" 2>/dev/null
installed="$tmp/usr/local/bin/berth"
"$installed" --version >/dev/null

mkdir "$tmp/units"
for unit in deploy/*.service; do
  if ! grep -qE '^ExecStart=/usr/local/bin/berth (serve|worker) ' "$unit"; then
    echo "check-deploy: $unit: ExecStart must run /usr/local/bin/berth serve|worker (what the package installs)" >&2
    exit 1
  fi
  sed "s|/usr/local/bin/berth |$installed |" "$unit" >"$tmp/units/$(basename "$unit")"
done
rc=0
out=$(systemd-analyze verify "$tmp"/units/*.service 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "check-deploy: systemd-analyze verify found problems in deploy/:" >&2
  echo "$out" >&2
  exit 1
fi
echo "check-deploy: $(ls deploy/*.service | xargs -n1 basename | tr '\n' ' ')verified against $tarball"
