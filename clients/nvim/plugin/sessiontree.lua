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

vim.api.nvim_create_user_command('SessionSearch', function(args)
  if args.args == '' then
    st().guard(st().search_prompt)
  else
    st().guard(st().search, args.args)
  end
end, { nargs = '?', desc = 'Search every session; pick a hit to show it in its tree' })

vim.api.nvim_create_user_command('SessionExport', function(args)
  st().guard(st().export_command, args.fargs)
end, {
  nargs = '+',
  complete = function(lead, line)
    local words = vim.split(line:sub(1, #line - #lead), '%s+', { trimempty = true })
    local choices
    if #words == 1 then
      choices = { 'markdown', 'html' }
    elseif #words == 2 then
      choices = vim.list_extend({ 'path', 'tree' }, vim.fn.getcompletion(lead, 'file'))
    else
      return vim.fn.getcompletion(lead, 'file')
    end
    return vim.tbl_filter(function(c)
      return c:sub(1, #lead) == lead
    end, choices)
  end,
  desc = 'Export the open session as Markdown or HTML: {markdown|html} [path|tree] [file]',
})

require('sessiontree.retire').register() -- :SessionTrash, :SessionArchive, :SessionRestore

vim.api.nvim_create_autocmd('VimLeavePre', {
  callback = function()
    if package.loaded['sessiontree'] then
      st().stop(1500)
    end
  end,
})
