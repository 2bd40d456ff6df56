"""``python -m autograder.sandbox.drop UID -- CMD...``: become UID (no groups) and exec CMD.

Used inside the sandbox when ``setpriv`` (util-linux) is missing: bubblewrap ran as root to set up the mounts,
the command itself runs as an ordinary host user.
"""
import os
import sys


def main(argv):
    uid = int(argv[0])
    cmd = argv[argv.index("--") + 1:]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
