"""``python -m wirekafka serve ...``"""

import sys

from wirekafka.cli import main

sys.exit(main())
