from memstore.cli import main

raise SystemExit(main())
