# PyGithub (Debian's python3-github, on requests) against ratelimit-server
# as a GitHub API, for tests/integration/test_http_clients.sh: N calls of
# get_repo("octo/hello") through Github(base_url=BASE), the repository's
# document served from the server's --serve-dir; prints "done N bad K", K
# the calls that did not give the repository (the 403 of a spent quota:
# PyGithub 1.55 raises a GithubException, or an AttributeError on a 403
# whose body is not GitHub's JSON).  PyGithub retries nothing of its own
# here (retry=None).
#   python3 http_github.py BASE N [TAG]
import sys

import github

base, n = sys.argv[1], int(sys.argv[2])
g = github.Github(base_url=base, retry=None, timeout=30)
bad = 0
for i in range(n):
    try:
        bad += g.get_repo("octo/hello").full_name != "octo/hello"
    except Exception as e:
        print("error", type(e).__name__, file=sys.stderr)
        bad += 1
print("done %d bad %d" % (n, bad))
