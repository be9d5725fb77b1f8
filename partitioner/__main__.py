from partitioner.cli import main

main()
