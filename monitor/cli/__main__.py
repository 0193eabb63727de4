"""``python -m monitor.cli``: the same as the ``herowatch`` command."""

from monitor.cli.main import main

if __name__ == "__main__":
    main()
