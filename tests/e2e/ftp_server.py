"""A real FTP server (pyftpdlib) for the tests of ftp:// inputs and outputs: serves a folder on loopback.

Usage: python ftp_server.py FOLDER. Binds 127.0.0.1 on a free port, prints the port on stdout, and serves
until it is terminated. One anonymous user may read and write (loopback only, test data only).
"""

from __future__ import annotations

import logging
import sys
import warnings

from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import FTPServer


def main() -> None:
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("pyftpdlib").setLevel(logging.ERROR)
    authorizer = DummyAuthorizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "write permissions assigned to anonymous user": on purpose, here
        authorizer.add_anonymous(sys.argv[1], perm="elradfmwMT")
    handler = FTPHandler
    handler.authorizer = authorizer
    handler.passive_ports = None
    server = FTPServer(("127.0.0.1", 0), handler)
    print(server.address[1], flush=True)
    server.serve_forever(handle_exit=True)


if __name__ == "__main__":
    main()
