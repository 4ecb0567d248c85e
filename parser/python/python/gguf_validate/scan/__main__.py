"""`python -m gguf_validate.scan`: see `gguf_validate.scan`."""

import sys

from gguf_validate.scan import main

sys.exit(main())
