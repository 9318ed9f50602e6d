from upright.cli import main

raise SystemExit(main())
