"""`python -m launch`: the command line that trains, evaluates and demonstrates."""
