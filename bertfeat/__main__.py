import sys

from bertfeat.cli import main

sys.exit(main())
