"""What the server knows of itself and of the people who use it: the background services'
heartbeats, the health report, the database roles' checks and grants, replica routing, each
person's preferences. Below the surfaces that show them; above the data it checks."""
