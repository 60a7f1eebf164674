-- Commands of the sessiontree plugin (Neovim 0.7 to 0.11). The daemon starts on first use.
if vim.g.loaded_sessiontree then
  return
end
vim.g.loaded_sessiontree = true

local function st()
  return require('sessiontree')
end

vim.api.nvim_create_user_command('SessionOpen', function(args)
  if args.args == '' then
    st().guard(st().pick)
  else
    st().guard(st().open_and_show, args.args)
  end
end, { nargs = '?', complete = 'file', desc = 'Open a session file (or pick one) and show its tree' })

vim.api.nvim_create_user_command('SessionTree', function()
  st().guard(st().show_tree)
end, { desc = 'Show the tree of the open session' })

vim.api.nvim_create_user_command('SessionContext', function()
  st().guard(st().show_context)
end, { desc = 'Show what the model sees at the leaf' })

vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    if package.loaded['sessiontree'] then
      st().stop(1500)
    end
  end,
})
