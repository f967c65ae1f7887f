package sqlitestore

// OldMigrations are the migrations of the layout before instances were per principal.
var OldMigrations = migrations[:5]
