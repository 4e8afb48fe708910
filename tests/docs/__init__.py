"""What the project promises its readers: the docs and the README run as shown, the public
API, the optional extras."""
