import sys

from pufferlib.tank import main

sys.exit(main())
