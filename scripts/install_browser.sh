#!/usr/bin/env bash
# Installs Debian's Chromium for the end-to-end browser test (Playwright drives it; no browser downloads).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: not root or no apt-get; the browser test will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null  # CJK font: lesson text in screenshots
